"""``python -m fedenv.traces import --reference-model``: every registered model, counted on its own
task's input."""

import pytest

from fedenv.registry import MODELS
from fedenv.traces import load_trace
from fedenv.traces.__main__ import main as traces_main

# MACs per sample worked by hand (Linear: in x out; Conv2d: H_out x W_out x C_out x C_in x k x k)
MLP_28 = 784 * 200 + 200 * 10
LENET5_28 = 28 * 28 * 6 * 25 + 10 * 10 * 16 * 6 * 25 + 400 * 120 + 120 * 84 + 84 * 10
LENET5_CLASSIC_28 = 24 * 24 * 6 * 25 + 8 * 8 * 16 * 6 * 25 + 256 * 120 + 120 * 84 + 84 * 10  # = 281,640
VGG6_32 = (32 * 32 * 32 * 27 + 16 * 16 * 64 * 32 * 9 + 8 * 8 * 128 * 64 * 9 + 4 * 4 * 256 * 128 * 9
           + 1024 * 256 + 256 * 10)
LSTM_80 = 80 * (8 * 1024 + 256 * 1024 + 2 * 256 * 1024) + 256 * 80  # per step: both layers' gates; head once
RESNET18_28 = (28 * 28 * 64 * 9  # 3x3 stride-1 stem on 1 channel
               + 4 * 28 * 28 * 64 * 64 * 9  # layer1
               + 14 * 14 * 128 * (64 * 9 + 64 + 3 * 128 * 9)  # layer2: strided conv, 1x1 shortcut, 3 convs
               + 7 * 7 * 256 * (128 * 9 + 128 + 3 * 256 * 9)  # layer3
               + 4 * 4 * 512 * (256 * 9 + 256 + 3 * 512 * 9)  # layer4
               + 512 * 10)
BY_HAND = {"mlp": MLP_28, "lenet5": LENET5_28, "lenet5-classic": LENET5_CLASSIC_28, "resnet18": RESNET18_28,
           "vgg6": VGG6_32, "lstm": LSTM_80}


def test_every_registered_model_has_a_hand_worked_count():
    assert set(BY_HAND) == set(MODELS.names())


@pytest.mark.parametrize("name", MODELS.names())
def test_csv_import_counts_the_reference_model_on_its_own_input(tmp_path, name):
    source = tmp_path / "devices.csv"
    source.write_text("client,device,ms_per_sample,upload_kbps,download_kbps\na,phone,2.0,1000,4000\n")
    out = tmp_path / "trace.json"
    assert traces_main(["import", "--csv", str(source), "--out", str(out), "--reference-model", name]) == 0
    trace = load_trace(str(out))
    assert trace.reference_model == name and trace.reference_macs == BY_HAND[name]


def test_an_unregistered_reference_model_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        traces_main(["import", "--csv", "x.csv", "--out", str(tmp_path / "t.json"), "--reference-model", "vit"])
    assert "invalid choice: 'vit'" in capsys.readouterr().err

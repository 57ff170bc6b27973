"""idx files in torchvision's layout: mnist and fashion-mnist (fedenv.data.idx)."""

import numpy as np
import pytest

from fedenv.data import load_dataset, read_idx
from tests.helpers import make_torchvision_folder, write_idx


@pytest.mark.parametrize("compress", [True, False])
def test_torchvision_layout_reads_gzipped_and_raw_idx(tmp_path, compress):
    arrays = make_torchvision_folder(tmp_path, "FashionMNIST", 30, 10, compress)
    data = load_dataset("fashion-mnist", str(tmp_path))
    assert data.train_x.shape == (30, 1, 28, 28) and data.test_y.tolist() == list(range(10))
    expected = (arrays["train-images-idx3-ubyte"][3] / 255.0 - (arrays["train-images-idx3-ubyte"] / 255.0).mean())
    expected /= (arrays["train-images-idx3-ubyte"] / 255.0).std(ddof=1)
    assert np.allclose(data.train_x[3, 0].numpy(), expected, atol=1e-4)


def test_missing_folder_error_says_where_the_files_must_be(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"MNIST/raw"):
        load_dataset("mnist", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match=r"dataset 'mnist' needs --data-root: a folder holding MNIST/raw/"):
        load_dataset("mnist")


def test_download_path_goes_through_torchvision_on_local_files(tmp_path):
    make_torchvision_folder(tmp_path, "MNIST", 20, 10, compress=False, seed=1)
    data = load_dataset("mnist", str(tmp_path), download=True)  # files present: torchvision skips the fetch
    assert data.train_x.shape == (20, 1, 28, 28)


def test_read_idx_rejects_a_truncated_file(tmp_path):
    write_idx(tmp_path / "x", np.zeros((4, 28, 28)), compress=False)
    (tmp_path / "x").write_bytes((tmp_path / "x").read_bytes()[:-10])
    with pytest.raises(ValueError, match="header says shape"):
        read_idx(tmp_path / "x")

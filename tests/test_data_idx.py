"""idx files in torchvision's layout: mnist and fashion-mnist (fedenv.data.idx)."""

import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fedenv.data import load_dataset, read_idx
from tests.helpers import make_torchvision_folder, write_idx

ROOT = Path(__file__).resolve().parents[1]


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


def damage_truncated_gzip(path):
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])  # a half-finished download


def damage_html_page(path):
    path.write_bytes(b"<!DOCTYPE html><html><body>503 Service Unavailable</body></html>")


def damage_header_cut_short(path):
    with gzip.open(path, "rb") as handle:
        data = handle.read()
    with gzip.open(path, "wb") as handle:
        handle.write(data[:10])  # magic number and 1.5 of the 3 dimensions an image file's header gives


@pytest.mark.parametrize("damage,what", [
    (damage_truncated_gzip, "gzip data cut short or corrupt"),
    (damage_html_page, "not gzip data"),
    (damage_header_cut_short, "idx header cut short: 10 bytes, the header of a 3-dimensional array takes 16"),
])
def test_a_damaged_idx_file_is_a_value_error_naming_the_file(tmp_path, damage, what):
    make_torchvision_folder(tmp_path, "MNIST", 20, 10, compress=True)
    path = tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte.gz"
    damage(path)
    with pytest.raises(ValueError) as error:
        read_idx(path)
    assert str(error.value).startswith(f"{path}: {what}")
    with pytest.raises(ValueError, match=re.escape(f"{path}: {what}")):
        load_dataset("mnist", str(tmp_path))


@pytest.mark.parametrize("n_images,n_labels", [(20, 19), (19, 20)])
def test_images_and_labels_of_different_counts_are_refused(tmp_path, n_images, n_labels):
    make_torchvision_folder(tmp_path, "MNIST", 20, 10, compress=False)
    raw = tmp_path / "MNIST" / "raw"
    write_idx(raw / "train-images-idx3-ubyte", np.zeros((n_images, 28, 28)), compress=False)
    write_idx(raw / "train-labels-idx1-ubyte", np.arange(n_labels) % 10, compress=False)
    with pytest.raises(ValueError) as error:
        load_dataset("mnist", str(tmp_path))
    assert str(error.value) == (f"{raw / 'train-images-idx3-ubyte'} holds {n_images} images but "
                                f"{raw / 'train-labels-idx1-ubyte'} {n_labels} labels; the counts must match "
                                f"(a truncated or mixed-up file)")


def test_a_damaged_data_file_is_a_one_line_usage_error_of_train_agents(tmp_path):
    make_torchvision_folder(tmp_path, "MNIST", 20, 10, compress=True)
    path = tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz"
    damage_html_page(path)
    result = subprocess.run([sys.executable, "train_agents.py", "--dataset", "mnist", "--data-root", str(tmp_path),
                             "--run-dir", str(tmp_path / "run"), "--episodes", "1"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and f"{path}: not gzip data" in errors[0] and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()

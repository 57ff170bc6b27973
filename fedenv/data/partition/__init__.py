"""Client partitioners: each maps the labels of the client pool to one index array per client.

``fedmarl`` (our default), ``dirichlet`` (Yurochkin et al., ICML 2019), ``iid`` and ``xclass`` (FedAdp's
x-class non-IID setting) partition by label; ``natural`` gives each client the samples of one user of a
dataset that records them (LEAF's partition). The server's validation split (used by FedCA, Kim et al.
arXiv 2012.03270) is held out of the training set before partitioning, by :func:`split_validation`.

Every module holds the library function (``partition_<name>``, with its own keyword arguments) and
the registered partitioner of :data:`fedenv.registry.PARTITIONERS`, one signature for all::

    partitioner(labels, owners, num_clients, rng, config) -> list[np.ndarray]

with ``labels`` int ``(N,)`` of the pool, ``owners`` int ``(N,)`` users of the pool's samples or None,
``rng`` a ``numpy.random.Generator`` and ``config`` the :class:`~fedenv.config.EnvConfig` (its options);
it returns ``num_clients`` non-empty index arrays into ``labels``.
"""

from fedenv.data.partition.common import split_validation
from fedenv.data.partition.dirichlet import partition_dirichlet
from fedenv.data.partition.fedmarl import partition_fedmarl
from fedenv.data.partition.iid import partition_iid
from fedenv.data.partition.natural import partition_natural
from fedenv.data.partition.xclass import partition_xclass

__all__ = ["partition_dirichlet", "partition_fedmarl", "partition_iid", "partition_natural", "partition_xclass",
           "split_validation"]

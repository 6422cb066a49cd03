"""Data layer: IDX reading, in-memory datasets and client partitioners.

Registries: :data:`DATASETS` (``"fashion_mnist"``, ``"mnist"``) and :data:`PARTITIONERS`
(``"iid"``, ``"quantity"``, ``"dirichlet"``).
"""
from sfl_sim.data.datasets import (
    DATASETS,
    IDX_FILES,
    MNIST,
    ArrayDataset,
    DatasetNotFoundError,
    FashionMNIST,
    IdxImageDataset,
)
from sfl_sim.data.idx import IDX_DTYPES, IdxFormatError, read_idx, write_idx
from sfl_sim.data.partition import (
    PARTITIONERS,
    DirichletLabelSkew,
    DirichletOverClients,
    IIDPartitioner,
    Partitioner,
    QuantityLabelSkew,
    label_histogram,
)

__all__ = [
    "ArrayDataset",
    "DATASETS",
    "DatasetNotFoundError",
    "DirichletLabelSkew",
    "DirichletOverClients",
    "FashionMNIST",
    "IDX_DTYPES",
    "IDX_FILES",
    "IIDPartitioner",
    "IdxFormatError",
    "IdxImageDataset",
    "MNIST",
    "PARTITIONERS",
    "Partitioner",
    "QuantityLabelSkew",
    "label_histogram",
    "read_idx",
    "write_idx",
]

from sfl_sim.kit.registry import import_submodules as _import_submodules

_import_submodules(__name__)  # registers every dataset/partitioner module of this package

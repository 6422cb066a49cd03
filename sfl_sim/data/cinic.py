"""CINIC-10 (Darlow et al., 2018) from its image folders.

Layout, as unpacked from ``CINIC-10.tar.gz`` (https://github.com/BayesWatch/cinic-10; nothing is
downloaded at run time)::

    train/<class>/*.png     90 000 images
    valid/<class>/*.png     90 000 images (optional; see include_valid_in_train)
    test/<class>/*.png      90 000 images

with the ten CIFAR-10 class folders ``airplane automobile bird cat deer dog frog horse ship
truck`` (label = position in that list).  Images are 32×32 PNGs; the few gray-scale ones are
converted to RGB.  Decoding uses Pillow.

**Loading is slow**: decoding 180 000 PNGs (270 000 with ``valid``) takes on the order of a
minute or more, every run (several threads decode in parallel; nothing is cached -- convert the
folders to arrays yourself if that matters).  ``max_train_samples`` / ``max_test_samples``
decode only the samples kept.

Sample order: file names sorted within each class folder, then the classes interleaved
round-robin (sample 0 of airplane, of automobile, ..., sample 1 of airplane, ...), so a
``max_*_samples`` prefix is class-balanced; with ``include_valid_in_train`` the ``valid`` samples
follow the ``train`` ones in the same order.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

import numpy as np

from sfl_sim.data.datasets import DATASETS
from sfl_sim.data.images import DatasetFormatError, LocalImageDataset
from sfl_sim.kit.params import Doc, PositiveInt

__all__ = ["CINIC10", "CINIC10_CLASSES", "list_image_folder", "read_png_rgb32"]

#: Class folders in label order (the CIFAR-10 classes).
CINIC10_CLASSES: tuple[str, ...] = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)
_SUBDIRS = ("CINIC-10", "cinic-10", "CINIC10", "cinic10")


def read_png_rgb32(path: str) -> np.ndarray:
    """Decode one image file into uint8 ``(32, 32, 3)`` RGB.

    Raises
    ------
    DatasetFormatError
        If Pillow cannot decode the file or it is not 32×32; the message names the file.
    """
    from PIL import Image, UnidentifiedImageError  # lazy: only CINIC-10 needs Pillow

    try:
        with Image.open(path) as img:
            img.load()
            rgb = img.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise DatasetFormatError(
            f"image file {path!r} is corrupt or not an image ({type(exc).__name__}: {exc})") from exc
    if rgb.size != (32, 32):
        raise DatasetFormatError(f"image file {path!r}: expected 32x32 pixels, got {rgb.size[0]}x{rgb.size[1]}")
    return np.asarray(rgb, dtype=np.uint8)


def list_image_folder(folder: str, classes: tuple[str, ...] = CINIC10_CLASSES) -> tuple[list[str], np.ndarray]:
    """The ``.png`` files of ``folder/<class>/`` in the interleaved order and their labels.

    Parameters
    ----------
    folder : str
        A split folder, e.g. ``.../train``.
    classes : tuple of str
        Class folder names in label order.

    Returns
    -------
    paths : list of str
    labels : numpy.ndarray
        int64, the index in ``classes`` of each path's folder.

    Raises
    ------
    DatasetFormatError
        If a class folder is missing or holds no ``.png`` file, or ``folder`` holds a
        sub-folder that is not a class.
    """
    extra = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)) and d not in classes)
    if extra:
        raise DatasetFormatError(f"folder {folder!r}: unexpected class folder(s) {', '.join(extra)}; allowed: "
                                 f"{', '.join(classes)}")
    per_class: list[list[str]] = []
    for name in classes:
        sub = os.path.join(folder, name)
        if not os.path.isdir(sub):
            raise DatasetFormatError(f"folder {folder!r}: class folder {name!r} is missing; expected "
                                     f"{', '.join(classes)}")
        files = sorted(f for f in os.listdir(sub) if f.lower().endswith(".png"))
        if not files:
            raise DatasetFormatError(f"class folder {sub!r} holds no .png file")
        per_class.append([os.path.join(sub, f) for f in files])
    paths: list[str] = []
    labels: list[int] = []
    for i in range(max(len(files) for files in per_class)):
        for label, files in enumerate(per_class):
            if i < len(files):
                paths.append(files[i])
                labels.append(label)
    return paths, np.asarray(labels, dtype=np.int64)


@DATASETS.register("cinic10")
class CINIC10(LocalImageDataset):
    """CINIC-10: 90 000 train / 90 000 test (+ 90 000 valid) 32×32 RGB images, 10 classes.

    Folder: ``data_root``, else ``$SFL_SIM_CINIC10_DIR``; the folder holding ``train/`` and
    ``test/`` (or its parent, if it is named ``CINIC-10``).  Normalisation constants are those
    published with the data set (BayesWatch/cinic-10 README): mean (0.47889522, 0.47227842,
    0.43047404), std (0.24205776, 0.23828046, 0.25874835), pixels scaled to [0, 1].  See the
    module docstring for the sample order and the (slow) loading.

    Parameters
    ----------
    data_root, max_train_samples, max_test_samples
        See :class:`~sfl_sim.data.images.LocalImageDataset`.

    Raises
    ------
    ValueError
        If ``include_valid_in_train`` is not a bool, ``num_workers`` is not None or an int >= 1,
        or as the base class.
    """

    name = "cinic10"
    env_var = "SFL_SIM_CINIC10_DIR"
    num_classes = 10
    mean = (0.47889522, 0.47227842, 0.43047404)
    std = (0.24205776, 0.23828046, 0.25874835)
    expected = ("the CINIC-10 image folders train/<class>/*.png and test/<class>/*.png (and valid/ when "
                "include_valid_in_train is true) in data_root or in data_root/CINIC-10, classes "
                + " ".join(CINIC10_CLASSES))
    how_to_get = ("download CINIC-10.tar.gz (https://github.com/BayesWatch/cinic-10, "
                  "https://datashare.ed.ac.uk/handle/10283/3192) and unpack it into a folder")

    class Params(LocalImageDataset.Params):
        """CINIC-10's parameters: the loaders' (:class:`~sfl_sim.data.datasets.LoaderParams`) and its own."""

        include_valid_in_train: Annotated[bool, Doc(
            "Append the ``valid/`` split to the training set (180 000 training images).  The SCALA papers train "
            "on the 90 000 ``train`` images.")] = False
        num_workers: Annotated[PositiveInt | None, Doc(
            "Threads decoding PNGs (Pillow releases the GIL while decoding); ``None``: ``min(8, os.cpu_count())``.  "
            "The result does not depend on it.")] = None

    params: Params

    def _splits(self) -> tuple[str, ...]:
        return ("train", "valid", "test") if self.params.include_valid_in_train else ("train", "test")

    def _resolve(self, root: str) -> tuple[str, list[str]]:
        best: tuple[str, list[str]] | None = None
        for candidate in (root, *(os.path.join(root, s) for s in _SUBDIRS)):
            missing = [s + "/" for s in self._splits() if not os.path.isdir(os.path.join(candidate, s))]
            if not missing:
                return candidate, []
            if best is None or len(missing) < len(best[1]):
                best = (candidate, missing)
        assert best is not None
        return best

    def _decode(self, paths: list[str]) -> np.ndarray:
        out = np.empty((len(paths), 32, 32, 3), dtype=np.uint8)
        if not paths:
            return out
        workers = self.params.num_workers or min(8, os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for i, img in enumerate(pool.map(read_png_rgb32, paths, chunksize=256)):
                out[i] = img
        return out

    def _read(self, root: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        folder, missing = self._resolve(root)
        if missing:
            raise self._not_found(f"missing folder(s) {', '.join(missing)} in {folder!r}")
        lists = {split: list_image_folder(os.path.join(folder, split)) for split in self._splits()}
        train_paths, train_y = lists["train"]
        if self.params.include_valid_in_train:
            train_paths = train_paths + lists["valid"][0]
            train_y = np.concatenate([train_y, lists["valid"][1]])
        test_paths, test_y = lists["test"]
        # Decode only what max_*_samples keeps (the base class cuts the same prefix again).
        max_train, max_test = self.params.max_train_samples, self.params.max_test_samples
        n_train = len(train_paths) if max_train is None else min(len(train_paths), max_train)
        n_test = len(test_paths) if max_test is None else min(len(test_paths), max_test)
        return (self._decode(train_paths[:n_train]), train_y[:n_train],
                self._decode(test_paths[:n_test]), test_y[:n_test])

    def _params(self) -> list[str]:
        return super()._params() + [f"include_valid_in_train={self.params.include_valid_in_train!r}",
                                    f"num_workers={self.params.num_workers!r}"]

"""Reader for the IDX file format used by MNIST and Fashion-MNIST.

An IDX file is a big-endian binary array::

    bytes 0-1   0x00 0x00              (magic, always zero)
    byte  2     data type code         (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
                                         0x0D float32, 0x0E float64)
    byte  3     number of dimensions d (>= 1)
    4*d bytes   the d dimension sizes, each a big-endian uint32
    rest        the data, C order, big-endian, prod(sizes) elements

Files may be stored raw or gzip-compressed (name ending in ``.gz``).  Nothing is downloaded.
"""
from __future__ import annotations

import gzip
import os
import struct
import zlib
from typing import Union

import numpy as np

__all__ = ["IdxFormatError", "IDX_DTYPES", "read_idx", "write_idx"]

#: IDX type code -> big-endian numpy dtype of the stored elements.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

PathLike = Union[str, "os.PathLike[str]"]


class IdxFormatError(ValueError):
    """Raised when a file is not a well-formed IDX file (bad magic, unknown type, wrong size)."""


def _read_bytes(path: str) -> bytes:
    if path.endswith(".gz"):
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read()
        except (OSError, EOFError, zlib.error) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise IdxFormatError(f"IDX file {path!r}: corrupt or truncated gzip stream ({exc})") from exc
    with open(path, "rb") as fh:
        return fh.read()


def read_idx(path: PathLike) -> np.ndarray:
    """Read an IDX file (raw or ``.gz``) into a numpy array.

    Parameters
    ----------
    path : str or os.PathLike
        File to read.  A name ending in ``.gz`` is decompressed with gzip.

    Returns
    -------
    numpy.ndarray
        Array of the shape stored in the header (e.g. ``(N, 28, 28)`` for image files,
        ``(N,)`` for label files) in the native-endian version of the stored type
        (``uint8`` for MNIST / Fashion-MNIST).  The array is a fresh, writable copy.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    IdxFormatError
        (a ``ValueError``) if the magic number, type code or dimension count is invalid, or the
        payload is shorter (truncated) or longer than the header announces; the message names
        the file.
    """
    path = os.fspath(path)
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise IdxFormatError(f"IDX file {path!r}: {len(raw)} bytes is too short for the 4-byte magic number")
    zero0, zero1, code, ndim = struct.unpack(">BBBB", raw[:4])
    if zero0 != 0 or zero1 != 0:
        raise IdxFormatError(
            f"IDX file {path!r}: bad magic number 0x{raw[:4].hex()}; expected 0x0000TTDD "
            f"(two zero bytes, type code, number of dimensions) - not an IDX file"
            + (" (looks gzip-compressed: name it *.gz)" if raw[:2] == b"\x1f\x8b" else "")
        )
    if code not in IDX_DTYPES:
        allowed = ", ".join(f"0x{c:02X}" for c in IDX_DTYPES)
        raise IdxFormatError(f"IDX file {path!r}: unknown data type code 0x{code:02X}; allowed: {allowed}")
    if ndim < 1:
        raise IdxFormatError(f"IDX file {path!r}: number of dimensions is 0; expected >= 1")
    header_len = 4 + 4 * ndim
    if len(raw) < header_len:
        raise IdxFormatError(
            f"IDX file {path!r}: truncated header ({len(raw)} bytes, {ndim} dimensions need {header_len})"
        )
    dims = struct.unpack(f">{ndim}I", raw[4:header_len])
    dtype = IDX_DTYPES[code]
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    got = len(raw) - header_len
    if got < expected:
        raise IdxFormatError(
            f"IDX file {path!r}: truncated: header announces shape {dims} of {dtype.newbyteorder('=')} "
            f"({expected} data bytes) but only {got} data bytes are present"
        )
    if got > expected:
        raise IdxFormatError(
            f"IDX file {path!r}: {got - expected} unexpected trailing bytes after the {expected} data bytes "
            f"announced by the header (shape {dims})"
        )
    data = np.frombuffer(raw, dtype=dtype, count=expected // dtype.itemsize, offset=header_len)
    return data.reshape(dims).astype(dtype.newbyteorder("="), copy=True)


def write_idx(path: PathLike, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file (gzip-compressed when ``path`` ends in ``.gz``).

    Mainly for tests and for converting data into the layout the loaders expect.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file.
    array : numpy.ndarray
        At least 1-D array of dtype uint8, int8, int16, int32, float32 or float64.

    Raises
    ------
    ValueError
        If ``array`` is 0-D or its dtype has no IDX type code.
    """
    path = os.fspath(path)
    arr = np.asarray(array)
    if arr.ndim < 1 or arr.ndim > 255:
        raise ValueError(f"array must have 1 to 255 dimensions, got shape {arr.shape}")
    code = next((c for c, dt in IDX_DTYPES.items() if dt.newbyteorder("=") == arr.dtype.newbyteorder("=")), None)
    if code is None:
        raise ValueError(
            f"array dtype {arr.dtype} has no IDX type code; allowed: uint8, int8, int16, int32, float32, float64")
    payload = struct.pack(">BBBB", 0, 0, code, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    payload += np.ascontiguousarray(arr, dtype=IDX_DTYPES[code]).tobytes()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as fh:
        fh.write(payload)

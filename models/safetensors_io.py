"""A minimal reader of the safetensors format (numpy, memory-mapped; bfloat16 through
``ml_dtypes``, which jax installs), so loading a checkpoint needs no extra package.

The format: an 8-byte little-endian header size, a JSON header mapping each tensor name to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the end of the
header), then the raw little-endian tensor bytes.

Example:
    >>> import numpy as np, tempfile, os
    >>> from safetensors.numpy import save_file  # doctest: +SKIP
    >>> path = os.path.join(tempfile.mkdtemp(), "m.safetensors")  # doctest: +SKIP
    >>> save_file({"w": np.ones((2, 3), np.float32)}, path)  # doctest: +SKIP
    >>> SafetensorsFile(path).get("w").shape  # doctest: +SKIP
    (2, 3)
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import ml_dtypes
import numpy as np

from xg2_jax._src.errors import ModelError, ModelFileError

__all__ = ["NpzFile", "SafetensorsFile"]

_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
    "BOOL": np.bool_,
}
_MAX_HEADER = 100 * 1024 * 1024


class SafetensorsFile:
    """One ``.safetensors`` file: its tensor names, shapes, and arrays on demand.

    Args:
        path: the file.

    Raises:
        ModelFileError: the file is missing.
        ModelError: the header is malformed (the message names the file).
    """

    def __init__(self, path):
        self.path = Path(path)
        try:
            with open(self.path, "rb") as f:
                raw = f.read(8)
                if len(raw) < 8:
                    raise ModelError(f"{self.path}: not a safetensors file (too short)")
                (size,) = struct.unpack("<Q", raw)
                if size > _MAX_HEADER:
                    raise ModelError(f"{self.path}: not a safetensors file (header size {size})")
                header = json.loads(f.read(size))
        except FileNotFoundError:
            raise ModelFileError(f"{self.path}: no such file") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ModelError(f"{self.path}: malformed safetensors header: {e}") from None
        if not isinstance(header, dict):
            raise ModelError(f"{self.path}: malformed safetensors header")
        header.pop("__metadata__", None)
        self._header = header
        self._data_start = 8 + size
        self._check_extent()
        self._map = None

    def _check_extent(self) -> None:
        """Every tensor's bytes lie inside the file (a truncated download fails here, naming
        the file, not later as a numpy reshape error)."""
        size = self.path.stat().st_size
        for name, entry in self._header.items():
            offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
            if (not isinstance(offsets, list) or len(offsets) != 2
                    or not all(isinstance(o, int) for o in offsets) or offsets[0] > offsets[1]):
                raise ModelError(f"{self.path}: tensor {name!r} has malformed data_offsets")
            if self._data_start + offsets[1] > size:
                raise ModelError(f"{self.path}: truncated: tensor {name!r} ends at byte "
                                 f"{self._data_start + offsets[1]}, the file has {size}")

    def keys(self) -> list[str]:
        return list(self._header)

    def shape(self, name: str) -> tuple:
        return tuple(self._header[name]["shape"])

    def get(self, name: str) -> np.ndarray:
        """The tensor ``name`` as a read-only numpy array (memory-mapped)."""
        entry = self._header[name]
        dtype = _DTYPES.get(entry.get("dtype"))
        if dtype is None:
            raise ModelError(f"{self.path}: tensor {name!r} has unsupported dtype "
                             f"{entry.get('dtype')!r}")
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * np.dtype(dtype).itemsize:
            raise ModelError(f"{self.path}: tensor {name!r}: byte range does not match "
                             f"shape {list(shape)} of {entry['dtype']}")
        if self._map is None:
            self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        data = self._map[self._data_start + begin:self._data_start + end]
        return data.view(dtype).reshape(shape)  # little-endian hosts (x86, ARM)


class NpzFile:
    """A numpy ``.npz`` archive read like a :class:`SafetensorsFile` (same tensor names).

    The shipped tiny model uses it: compressed, its all-zero rows (vocabulary entries never
    trained) take almost no space.
    """

    def __init__(self, path):
        self.path = Path(path)
        try:
            self._npz = np.load(self.path, allow_pickle=False)
        except FileNotFoundError:
            raise ModelFileError(f"{self.path}: no such file") from None
        except (ValueError, OSError) as e:
            raise ModelError(f"{self.path}: not a readable .npz archive: {e}") from None
        self._cache: dict = {}

    def keys(self) -> list[str]:
        return list(self._npz.files)

    def get(self, name: str) -> np.ndarray:
        if name not in self._cache:
            self._cache[name] = self._npz[name]
        return self._cache[name]

    def shape(self, name: str) -> tuple:
        return tuple(self.get(name).shape)

"""spark_dsg 1.1.3's binary graph format as byte patterns: each tagged scalar, fixed array and Eigen matrix, the
composite fields built of them, how many bytes each vector element takes, and an attribute type's fields as steps
(:mod:`.payload_check` walks them, :mod:`.payload_shapes` matches small ones whole)."""
from __future__ import annotations

import re
import struct
from typing import Any

U32_LENGTH = struct.Struct("<I")
ROWS_COLS = struct.Struct("<xqxq")  # an Eigen matrix's rows and cols, each tagged INT64
ARRAY_TAGS = (0xDB, 0xDD)  # STR32, ARR32: spark_dsg's length reader takes either
NONE = b"\xdd\x00\x00\x00\x00"  # an empty vector or map, as spark_dsg writes it
DYNAMIC_START = 0x00
DYNAMIC_END = 0x01
TRUE = 0xC3


def tagged(tag: int, size: int) -> bytes:
    return re.escape(bytes([tag])) + (b".{%d}" % size if size else b"")


F64 = tagged(0xCB, 8)
F32 = tagged(0xCA, 4)
U64 = tagged(0xCF, 8)
U32 = tagged(0xCE, 4)
U8 = tagged(0xCC, 1)
I32 = tagged(0xD2, 4)
I64 = tagged(0xD3, 8)
BOOL = rb"[\xc2\xc3]"
OPTIONAL_U32 = rb"(?:\xc0|" + U32 + rb")"


def array_head(length: int) -> bytes:
    """The header of a fixed-size array (std::array, a quaternion, a bounding box, ...)."""
    return rb"[\xdb\xdd]" + re.escape(U32_LENGTH.pack(length))


def eigen_fixed(rows: int, cols: int, scalar: bytes) -> bytes:
    """A fixed-size Eigen matrix other than a 3-vector: its length, rows and cols, then its values."""
    return array_head(rows * cols + 2) + b"\xd3" + re.escape(struct.pack("<q", rows)) + b"\xd3" + re.escape(
        struct.pack("<q", cols)
    ) + scalar * (rows * cols)


VECTOR3D = F64 * 3  # Eigen 3-vectors are written as three bare scalars
VECTOR3F = F32 * 3
QUATERNIOND = array_head(4) + F64 * 4
COLOR = U8 * 4
BOUNDING_BOX = array_head(4) + I32 + VECTOR3F + VECTOR3F + eigen_fixed(3, 3, F32)  # type, dimensions, centre, rotation
LAYER_KEY = array_head(2) + I64 + U32
NEAREST_VERTEX = array_head(4) + array_head(3) + I32 * 3 + array_head(3) + F64 * 3 + U64 + OPTIONAL_U32
FACE = array_head(3) + U64 * 3
NODE_HEAD = array_head(4) + I64 + U64 + U32 + U8  # layer, id, partition, attribute type
EDGE_KEY = array_head(3) + U64 + U64  # source, target
EDGE_HEAD = EDGE_KEY + U8  # and the attribute type

# Bytes each element of a vector takes when every tag is right: what a declared count is checked with.
SIZE = {F64: 9, U64: 9, U32: 5, U8: 2, F32: 5, VECTOR3D: 27, VECTOR3F: 15, COLOR: 8, FACE: 32, LAYER_KEY: 19}
NEAREST_VERTEX_MIN = 67  # its optional label may be NIL (1 byte) or a UINT32 (5)


def compile_pattern(pattern: bytes) -> re.Pattern[bytes]:
    return re.compile(pattern, re.DOTALL)



# One step of an attribute type's fields, as (what it is, its argument, the field names).
FIXED = "fixed"  # a run of fixed-size fields: a compiled pattern
SKIP = "skip"  # a string or a vector of fixed-size elements: the bytes of each element
JSON = "json"  # a metadata string, kept to be judged: 1 (its bytes)
MATRIX = "matrix"  # a dynamic Eigen matrix: (bytes of each value, whether it is a column vector)
WALK = "walk"  # elements of varying size, walked one by one: a function of the walk and where
Step = tuple[str, Any, str]


def fixed(pattern: bytes, name: str) -> Step:
    return (FIXED, compile_pattern(pattern), name)


def string(name: str) -> Step:
    return (SKIP, 1, name)


def vector(element: bytes, name: str) -> Step:
    return (SKIP, SIZE[element], name)


def matrix(element: bytes, name: str, *, column: bool = False) -> Step:
    return (MATRIX, (SIZE[element], column), name)

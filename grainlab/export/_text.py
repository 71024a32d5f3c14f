"""Column-at-a-time text building for the exporters.

Exports of millions of nodes cannot format one Python object per field. Every
helper here turns a whole column into a pyarrow string array with Arrow's C++
kernels (cast, element-wise join, replace); an output line per row is the
element-wise join of such columns, and `write_rows` writes the joined array's
character buffer straight to the file (no per-row Python string at all).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

# Rows formatted per batch: bounds the memory of the text being built
# (a batch of GraphML node lines is a few hundred MB at most).
BATCH_ROWS = 200_000


def to_arrow(values) -> pa.Array:
    """A pandas Series / numpy array as an Arrow array; NaN and NA become null,
    categoricals are decoded to strings."""
    if isinstance(values, pd.Series):
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.astype(object)
        arr = pa.array(values, from_pandas=True)
    else:
        arr = pa.array(np.asarray(values), from_pandas=True)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def kind_of(arr: pa.Array) -> str:
    """'bool', 'int', 'float' or 'str': how a column is written."""
    t = arr.type
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    return "str"


def ints(arr: pa.Array) -> pa.Array:
    return pc.cast(arr, pa.string())


def floats(arr: pa.Array, nan: str | None, inf: str | None) -> pa.Array:
    """Shortest round-trip decimal; NaN/±inf spelled `nan`/`inf` (None = null)."""
    arr = pc.cast(arr, pa.float64())
    text = pc.cast(arr, pa.string())
    finite = pc.is_finite(arr)
    is_nan = pc.is_nan(arr)
    positive = pc.greater(arr, 0)
    inf_text = pa.scalar(inf, pa.string())
    neg_inf_text = pa.scalar(None if inf is None else "-" + inf, pa.string())
    special = pc.if_else(is_nan, pa.scalar(nan, pa.string()),
                         pc.if_else(positive, inf_text, neg_inf_text))
    return pc.if_else(pc.fill_null(finite, True), text, special)


def bools(arr: pa.Array) -> pa.Array:
    return pc.if_else(arr, "true", "false")


def xml_escaped(arr: pa.Array) -> pa.Array:
    arr = pc.cast(arr, pa.string())
    for raw, esc in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;")):
        arr = pc.replace_substring(arr, raw, esc)
    return _strip_controls(arr)


def json_escaped(arr: pa.Array) -> pa.Array:
    """Contents of a JSON string literal (without the quotes)."""
    arr = pc.cast(arr, pa.string())
    arr = pc.replace_substring(arr, "\\", "\\\\")
    arr = pc.replace_substring(arr, '"', '\\"')
    return _strip_controls(arr)


def _strip_controls(arr: pa.Array) -> pa.Array:
    # Control characters are invalid in XML 1.0 and must be escaped in JSON;
    # none belongs in an identity, a path or a function name.
    return pc.replace_substring_regex(arr, r"[\x00-\x1f]", " ")


def us(ns) -> pa.Array:
    """Integer nanoseconds as microseconds with exactly three decimals
    ("12.345"): exact, whatever the magnitude (no float rounding)."""
    ns = np.asarray(ns, dtype=np.int64)
    a = np.abs(ns)
    whole = pc.cast(pa.array(a // 1000), pa.string())
    frac = pc.utf8_lpad(pc.cast(pa.array(a % 1000), pa.string()), 3, "0")
    text = pc.binary_join_element_wise(whole, frac, ".")
    if (ns < 0).any():  # never for trace times; kept exact all the same
        text = pc.if_else(pa.array(ns < 0), pc.binary_join_element_wise("-", text, ""), text)
    return text


def optional(prefix: str, text: pa.Array, suffix: str) -> pa.Array:
    """prefix + text + suffix where text is not null, else ""."""
    joined = pc.binary_join_element_wise(prefix, text, suffix, "")
    return pc.fill_null(joined, "")


def fields(items) -> list:
    """Pieces for one element-wise join of optional fields, from
    (prefix, text, suffix) triples: a column without missing values keeps its
    constant text around it (merged with the neighbours' constants), a column
    with missing values becomes an array that is empty where the value is missing."""
    pieces: list = []
    pending = ""
    for prefix, text, suffix in items:
        if text.null_count == 0:
            pieces += [pending + prefix, text]
            pending = suffix
        else:
            if pending:
                pieces.append(pending)
                pending = ""
            pieces.append(optional(prefix, text, suffix))
    if pending:
        pieces.append(pending)
    return pieces


def arrow_column(series: pd.Series) -> pa.Array:
    """A column as Arrow, keeping categoricals dictionary-encoded (so the few
    categories can be formatted once instead of every row)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return pa.DictionaryArray.from_arrays(
            pa.array(series.cat.codes.to_numpy(), mask=series.isna().to_numpy()),
            to_arrow(pd.Series(series.cat.categories.astype(object))))
    return to_arrow(series)


def join(pieces) -> pa.Array:
    """Element-wise concatenation of string arrays / str scalars."""
    return pc.binary_join_element_wise(*pieces, "")


def write_rows(f, rows: pa.Array) -> None:
    """Write the concatenated characters of a string array (no separator)."""
    rows = pc.fill_null(rows, "")
    if pa.types.is_large_string(rows.type):
        offset_type = np.int64
    else:
        offset_type = np.int32
    _, offsets_buf, data_buf = rows.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)
    first = int(offsets[rows.offset])
    last = int(offsets[rows.offset + len(rows)])
    f.write(memoryview(data_buf)[first:last])


def batches(n: int, size: int = BATCH_ROWS):
    """(start, stop) row ranges covering 0..n."""
    for start in range(0, n, size):
        yield start, min(start + size, n)


def type_codes(column: pd.Series, names: list[str]) -> np.ndarray:
    """Index of each row's value in `names` (len(names) if absent), computed on
    the categories of a categorical column rather than on every row."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        lookup = np.array([names.index(c) if c in names else len(names)
                           for c in column.cat.categories] + [len(names)], dtype=np.int32)
        return lookup[column.cat.codes.to_numpy()]   # code -1 (NaN) -> last entry
    values = column.astype(str).to_numpy()
    code = np.full(len(values), len(names), dtype=np.int32)
    for i, name in enumerate(names):
        code[values == name] = i
    return code

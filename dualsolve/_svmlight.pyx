# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""LIBSVM / svmlight text format: a C-level parser and writer (private module).

The public functions are ``dualsolve.datasets.load_svmlight`` and ``dump_svmlight``; this
module only turns a whole in-memory file (``bytes``) into arrays and back.

Parsing runs without the GIL: one vectorised pass counts '\n' and ':' to size the output
arrays, one pass parses. Numbers go through an exact fast path (Clinger: a decimal
mantissa below 2**53 times or divided by an exact power of ten up to 1e22 is a single
correctly rounded IEEE operation, given double evaluation as on x86-64 / arm64), and
everything else (long mantissas, large exponents, nan, inf) through C ``strtod``, which
rounds correctly (glibc, macOS, MSVC >= 2019). So every value is bit-identical to
Python's ``float()`` of the same token.
"""
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport strtod, malloc, free, qsort
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free

import numpy as np


cdef extern from "Python.h":
    # Shortest repr that round-trips (the algorithm behind Python's repr(float)).
    char* PyOS_double_to_string(double val, char format_code, int precision,
                                int flags, int* type) except NULL


# Parse error codes; the Python wrapper turns them into messages.
cdef enum:
    OK = 0
    ERR_LABEL = 1
    ERR_MULTILABEL = 2
    ERR_INDEX = 3
    ERR_COLON = 4
    ERR_VALUE = 5
    ERR_QID = 6
    ERR_INDEX_LARGE = 7

_MESSAGES = {
    ERR_LABEL: "invalid label",
    ERR_MULTILABEL: "multi-label targets ('1,2') are not supported",
    ERR_INDEX: "invalid feature index (expected a non-negative integer)",
    ERR_COLON: "expected 'index:value'",
    ERR_VALUE: "invalid feature value",
    ERR_QID: "invalid qid (expected 'qid:<integer>')",
    ERR_INDEX_LARGE: "feature index too large",
}

# 10**k for k <= 22 are exact doubles: the limit of Clinger's fast path.
cdef double POW10[23]
cdef int _k
POW10[0] = 1.0
for _k in range(1, 23):
    POW10[_k] = POW10[_k - 1] * 10.0

cdef uint64_t TWO53 = 9007199254740992ULL
# (2**63 - 10) // 10: below it, idx * 10 + 9 cannot overflow int64
cdef int64_t INDEX_LIMIT = 922337203685477579LL
cdef int64_t INT64_MAX_ = 9223372036854775807LL


cdef struct ParseState:
    # outputs (caller-allocated, sized by counting '\n' and ':')
    double* labels
    int64_t* indptr
    int64_t* indices
    double* data64
    float* data32
    int64_t* qids
    int64_t* row_lines
    # results
    Py_ssize_t n_rows
    Py_ssize_t nnz
    int64_t min_index
    int64_t max_index
    bint all_sorted
    # error report
    int err
    Py_ssize_t err_line
    Py_ssize_t err_line_start
    Py_ssize_t err_tok_start
    Py_ssize_t err_tok_end


cdef inline bint is_space(char c) noexcept nogil:
    # '\r' counts as blank so CRLF files need no special case; '\n' ends a line.
    return c == b' ' or c == b'\t' or c == b'\r' or c == b'\v' or c == b'\f'


cdef inline bint is_delim(char c) noexcept nogil:
    return is_space(c) or c == b'\n' or c == b'#'


cdef inline const char* token_end(const char* p, const char* end) noexcept nogil:
    while p < end and not is_delim(p[0]):
        p += 1
    return p


cdef inline bint strtod_char(char c) noexcept nogil:
    # Characters of decimal numbers and of nan / inf / infinity. Rejecting the rest keeps
    # strtod from accepting what float() refuses (hex floats '0x1p3', 'nan(123)').
    if b'0' <= c <= b'9':
        return True
    return c in b'+-.eEaAfFiInNtTyY'


cdef inline const char* parse_number(const char* p, const char* end,
                                     double* out) noexcept nogil:
    """Parse the token starting at p (it ends at a delimiter or at `end`) as a double.

    Returns a pointer just past the token, or NULL if the token is not a number.
    """
    cdef const char* start = p
    cdef const char* q
    cdef bint neg = False, exact = True, exp_neg = False
    cdef uint64_t m = 0
    # exp10 drops by one per fractional digit while m is 0: as wide as a buffer length, so
    # a multi-GB run of zeros cannot wrap it back into the fast path's range
    cdef Py_ssize_t exp10 = 0
    cdef int exp_val = 0
    cdef Py_ssize_t n_digits = 0
    cdef double v

    if p < end and (p[0] == b'-' or p[0] == b'+'):
        neg = p[0] == b'-'
        p += 1
    while p < end and b'0' <= p[0] <= b'9':
        # Keep m below 10 * (2**53 // 10) + 9; a longer mantissa goes to strtod.
        if m < 900719925474099ULL:
            m = m * 10 + <uint64_t>(p[0] - c'0')
        else:
            exact = False
        p += 1
        n_digits += 1
    if p < end and p[0] == b'.':
        p += 1
        while p < end and b'0' <= p[0] <= b'9':
            if m < 900719925474099ULL:
                m = m * 10 + <uint64_t>(p[0] - c'0')
                exp10 -= 1
            else:
                exact = False
            p += 1
            n_digits += 1
    if n_digits > 0 and p < end and (p[0] == b'e' or p[0] == b'E'):
        q = p + 1
        if q < end and (q[0] == b'-' or q[0] == b'+'):
            exp_neg = q[0] == b'-'
            q += 1
        if q < end and b'0' <= q[0] <= b'9':
            while q < end and b'0' <= q[0] <= b'9':
                if exp_val < 100000:
                    exp_val = exp_val * 10 + (q[0] - c'0')
                q += 1
            exp10 += -exp_val if exp_neg else exp_val
            p = q
        else:
            exact = False  # '1e' or '1e+': let strtod reject it
    if exact and n_digits > 0 and (p == end or is_delim(p[0])):
        if m == 0:
            out[0] = -0.0 if neg else 0.0
            return p
        if m <= TWO53 and -22 <= exp10 <= 22:
            v = <double>m
            if exp10 < 0:
                v = v / POW10[-exp10]
            else:
                v = v * POW10[exp10]
            out[0] = -v if neg else v
            return p

    return parse_number_slow(start, end, out)


cdef const char* parse_number_slow(const char* start, const char* end,
                                   double* out) noexcept nogil:
    """strtod for what the fast path cannot do exactly: long mantissas, big exponents,
    nan / inf, and garbage (rejected). Kept out of line so the fast path stays small."""
    cdef const char* q
    cdef char* stop
    end = token_end(start, end)
    if end == start:
        return NULL
    q = start
    while q < end:
        if not strtod_char(q[0]):
            return NULL
        q += 1
    out[0] = strtod(start, &stop)
    # The buffer is a bytes object (NUL-terminated) and the token is followed by a
    # delimiter or the end, so strtod stops at or before `end`. Under a locale with a
    # decimal comma it stops early; we report that as a bad number, never a wrong one.
    return end if stop == end else NULL


cdef inline bint parse_int64(const char* p, const char* end, bint allow_sign,
                             int64_t* out) noexcept nogil:
    """Parse [p, end) as a decimal integer; False on any other character or overflow."""
    cdef bint neg = False
    cdef int64_t v = 0
    if allow_sign and p < end and (p[0] == b'-' or p[0] == b'+'):
        neg = p[0] == b'-'
        p += 1
    if p == end:
        return False
    while p < end:
        if not (b'0' <= p[0] <= b'9') or v > INDEX_LIMIT:
            return False
        v = v * 10 + (p[0] - c'0')
        p += 1
    out[0] = -v if neg else v
    return True


cdef void fail(ParseState* st, int err, const char* buf, Py_ssize_t line,
               const char* line_start, const char* tok, const char* tok_end) noexcept nogil:
    st.err = err
    st.err_line = line
    st.err_line_start = line_start - buf
    st.err_tok_start = tok - buf
    st.err_tok_end = tok_end - buf


cdef void parse_buffer(const char* buf, Py_ssize_t size, ParseState* st) noexcept nogil:
    cdef const char* p = buf
    cdef const char* end = buf + size
    cdef const char* line_start
    cdef const char* tok
    cdef const char* tend
    cdef const char* q
    cdef Py_ssize_t line = 0, row = 0, nnz = 0
    cdef int64_t idx, last, min_index = INT64_MAX_, max_index = -1
    cdef double v
    cdef bint all_sorted = True

    st.indptr[0] = 0
    if size >= 3 and buf[0] == b'\xef' and buf[1] == b'\xbb' and buf[2] == b'\xbf':
        p += 3      # a UTF-8 byte order mark (files saved by some Windows editors)
    while p < end:
        line += 1
        line_start = p
        while p < end and is_space(p[0]):
            p += 1
        if p == end:
            break
        if p[0] == b'#':  # a comment-only line is not a row
            while p < end and p[0] != b'\n':
                p += 1
        if p < end and p[0] == b'\n':  # blank line
            p += 1
            continue
        if p == end:
            break

        # label
        tok = p
        p = parse_number(tok, end, &v)
        if p == NULL:
            tend = token_end(tok, end)
            q = tok
            while q < tend and q[0] != b',':
                q += 1
            fail(st, ERR_MULTILABEL if q < tend else ERR_LABEL, buf, line, line_start,
                 tok, tend)
            return
        st.labels[row] = v
        st.qids[row] = 0
        st.row_lines[row] = line

        # index:value pairs (and qid:N)
        last = -1
        while True:
            while p < end and is_space(p[0]):
                p += 1
            if p == end or p[0] == b'\n':
                break
            if p[0] == b'#':
                while p < end and p[0] != b'\n':
                    p += 1
                break
            tok = p
            if p[0] == b'q':
                tend = token_end(p, end)
                if tend - tok >= 4 and tok[1] == b'i' and tok[2] == b'd' and tok[3] == b':':
                    if not parse_int64(tok + 4, tend, True, &st.qids[row]):
                        fail(st, ERR_QID, buf, line, line_start, tok, tend)
                        return
                    p = tend
                    continue
            # index: digits up to ':'
            idx = 0
            while p < end and b'0' <= p[0] <= b'9':
                if idx > INDEX_LIMIT:
                    fail(st, ERR_INDEX_LARGE, buf, line, line_start, tok,
                         token_end(tok, end))
                    return
                idx = idx * 10 + (p[0] - c'0')
                p += 1
            if p == tok or p == end or p[0] != b':':
                # "12" (no colon) vs "-1:2", "1.5:2", "a:2", ":2" (bad index)
                tend = token_end(tok, end)
                fail(st, ERR_COLON if p > tok and p == tend else ERR_INDEX, buf, line,
                     line_start, tok, tend)
                return
            p = parse_number(p + 1, end, &v)
            if p == NULL:
                fail(st, ERR_VALUE, buf, line, line_start, tok, token_end(tok, end))
                return
            st.indices[nnz] = idx
            if st.data32 != NULL:
                st.data32[nnz] = <float>v
            else:
                st.data64[nnz] = v
            nnz += 1
            if idx <= last:
                all_sorted = False
            last = idx
            if idx < min_index:
                min_index = idx
            if idx > max_index:
                max_index = idx

        row += 1
        st.indptr[row] = nnz
        if p < end:  # p is at '\n'
            p += 1

    st.n_rows = row
    st.nnz = nnz
    st.min_index = min_index if nnz > 0 else 0
    st.max_index = max_index
    st.all_sorted = all_sorted
    st.err = OK



cdef void count_newlines_colons(const char* buf, Py_ssize_t size, Py_ssize_t* n_lines,
                               Py_ssize_t* n_colons) noexcept nogil:
    # Branch-free byte counters over blocks of 255 bytes (so they cannot wrap) let the
    # compiler vectorise this; it runs at memory speed, ~5x faster than bytes.count.
    cdef Py_ssize_t i = 0, stop, nl = 0, co = 0
    cdef unsigned char block_nl, block_co
    while i < size:
        block_nl = 0
        block_co = 0
        stop = min(size, i + 255)
        while i < stop:
            block_nl += buf[i] == c'\n'
            block_co += buf[i] == c':'
            i += 1
        nl += block_nl
        co += block_co
    n_lines[0] += nl
    n_colons[0] += co


def _snippet(bytes buf, Py_ssize_t start, Py_ssize_t stop=-1, Py_ssize_t width=60):
    """Text of buf from start to the end of its line (or to stop), shortened to width."""
    cdef Py_ssize_t nl = buf.find(b"\n", start)
    if nl < 0:
        nl = len(buf)
    if stop < 0 or stop > nl:
        stop = nl
    text = buf[start:stop].rstrip(b"\r").decode("utf-8", "replace")
    return text if len(text) <= width else text[:width - 3] + "..."


def line_text(bytes buf, Py_ssize_t lineno):
    """Quoted, shortened text of 1-based line `lineno` (for error messages)."""
    cdef Py_ssize_t start = 0, i
    for i in range(lineno - 1):
        start = buf.find(b"\n", start) + 1
        if start == 0:
            return ""
    return _snippet(buf, start)


def parse(bytes buf, bint float32=False):
    """Parse a whole svmlight file held in ``buf``.

    Returns ``(labels, indptr, indices, data, qids, row_lines, min_index, max_index,
    all_sorted)``: indices are the raw int64 numbers from the file (no base shift),
    ``row_lines[i]`` is the 1-based line number of row i (for error messages), and
    ``all_sorted`` tells whether every row's indices were strictly increasing.
    Raises ValueError naming the line on a malformed line.
    """
    cdef const char* cbuf = buf
    cdef Py_ssize_t size = len(buf), max_rows = 1, max_nnz = 0
    # Upper bounds: every row ends with '\n' (or the end), every pair has one ':'.
    with nogil:
        count_newlines_colons(cbuf, size, &max_rows, &max_nnz)
    labels = np.empty(max_rows, dtype=np.float64)
    indptr = np.empty(max_rows + 1, dtype=np.int64)
    indices = np.empty(max_nnz, dtype=np.int64)
    data = np.empty(max_nnz, dtype=np.float32 if float32 else np.float64)
    qids = np.empty(max_rows, dtype=np.int64)
    row_lines = np.empty(max_rows, dtype=np.int64)

    cdef double[::1] lab_v = labels
    cdef int64_t[::1] ptr_v = indptr, ind_v = indices, qid_v = qids, line_v = row_lines
    cdef float[::1] d32
    cdef double[::1] d64
    cdef ParseState st
    st.labels = &lab_v[0]
    st.indptr = &ptr_v[0]
    st.indices = &ind_v[0] if max_nnz > 0 else NULL
    st.qids = &qid_v[0]
    st.row_lines = &line_v[0]
    st.data32 = NULL
    st.data64 = NULL
    if max_nnz > 0:
        if float32:
            d32 = data
            st.data32 = &d32[0]
        else:
            d64 = data
            st.data64 = &d64[0]
    st.err = OK

    with nogil:
        parse_buffer(cbuf, size, &st)

    if st.err != OK:
        raise ValueError("line %d: %s: %r (line: %r)" % (
            st.err_line, _MESSAGES[st.err],
            _snippet(buf, st.err_tok_start, st.err_tok_end, 30),
            _snippet(buf, st.err_line_start)))

    n, nnz = st.n_rows, st.nnz
    return (trim(labels, n), trim(indptr, n + 1), trim(indices, nnz), trim(data, nnz),
            trim(qids, n), row_lines[:n], st.min_index, st.max_index, st.all_sorted)


def trim(a, Py_ssize_t k):
    # Drop the over-allocation (blank lines, comments, qid tokens). Copy so the short
    # array does not pin the large one; the usual exact-count case costs nothing.
    return a[:k].copy() if k < a.shape[0] else a


cdef int cmp_int64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


def first_duplicate_row(const int64_t[::1] indptr, const int64_t[::1] indices):
    """Index of the first row holding a feature index twice, or -1.

    Only rows whose indices are not strictly increasing need a sort, so sorted files
    pay one comparison per entry.
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, k, a, b, longest = 0, found = -1
    cdef bint increasing
    cdef int64_t* tmp
    for i in range(n):
        longest = max(longest, indptr[i + 1] - indptr[i])
    tmp = <int64_t*>malloc(max(longest, 1) * sizeof(int64_t))
    if tmp == NULL:
        raise MemoryError()
    with nogil:
        for i in range(n):
            a, b = indptr[i], indptr[i + 1]
            increasing = True
            for k in range(a + 1, b):
                if indices[k] <= indices[k - 1]:
                    increasing = False
                    break
            if increasing:
                continue
            memcpy(tmp, &indices[a], (b - a) * sizeof(int64_t))
            qsort(tmp, b - a, sizeof(int64_t), cmp_int64)
            for k in range(1, b - a):
                if tmp[k] == tmp[k - 1]:
                    found = i
                    break
            if found >= 0:
                break
    free(tmp)
    return found


# ---------------------------------------------------------------------------- writer

cdef inline char* put_int(char* out, int64_t v) noexcept nogil:
    cdef char tmp[24]
    cdef int n = 0
    cdef uint64_t u
    if v < 0:
        out[0] = b'-'
        out += 1
        u = <uint64_t>(-(v + 1)) + 1
    else:
        u = <uint64_t>v
    while True:
        tmp[n] = <char>(c'0' + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    while n > 0:
        n -= 1
        out[0] = tmp[n]
        out += 1
    return out


cdef inline char* put_double(char* out, double v) except NULL:
    # 'r' = repr: the shortest string that reads back as the same double. Integral
    # values come out as '1' rather than '1.0'; both parse to the same number.
    cdef char* s = PyOS_double_to_string(v, b'r', 0, 0, NULL)
    cdef char* t = s
    while t[0] != 0:
        out[0] = t[0]
        out += 1
        t += 1
    PyMem_Free(s)
    return out


def format_rows(const double[::1] y, const int64_t[::1] indptr,
                const int64_t[::1] indices, const double[::1] data,
                int64_t index_offset, const int64_t[::1] qids=None):
    """svmlight text of a CSR matrix: one line per row, entries in stored order."""
    cdef Py_ssize_t n = y.shape[0], i, k
    # Worst case per row: label (24) + ' qid:' + int (25) + '\n'; per entry
    # ' ' + int (20) + ':' + double (24). Allocating it once avoids any resizing.
    cdef Py_ssize_t cap = n * 52 + indices.shape[0] * 48 + 1
    cdef char* buf = <char*>malloc(cap)
    cdef char* out = buf
    if buf == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            out = put_double(out, y[i])
            if qids is not None:
                memcpy(out, b" qid:", 5)
                out = put_int(out + 5, qids[i])
            for k in range(indptr[i], indptr[i + 1]):
                out[0] = b' '
                out = put_int(out + 1, indices[k] + index_offset)
                out[0] = b':'
                out = put_double(out + 1, data[k])
            out[0] = b'\n'
            out += 1
        return PyBytes_FromStringAndSize(buf, out - buf)
    finally:
        free(buf)

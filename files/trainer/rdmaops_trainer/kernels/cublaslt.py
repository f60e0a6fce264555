"""cuBLASLt GEMMs with a GELU epilogue, through ctypes, for ``train.fused_mlp``.

torch calls cuBLASLt for its own matmuls but exposes only the forward GELU epilogue without the GELU's input
(``torch._addmm_activation``), which a backward needs. This module calls the library torch already loaded:

* ``GELU_AUX_BIAS``: ``pre = x @ w.T + b`` and ``h = gelu(pre)`` from one GEMM, both written by its epilogue;
* ``DGELU``: ``dpre = (dy @ w) * gelu'(pre)`` from one GEMM (``DGELU_BGRAD`` would also sum the bias
  gradient, but is slower than a separate sum; kept for the benchmark).

Each is planned as a ``Gemm`` in cuBLAS's column-major terms (a row-major torch matrix is its transpose in
column-major). The same plan runs through torch ops on the CPU (``run_reference``), so the tests check the
transposes and leading dimensions the GPU gets, not only the math. GELU is the tanh approximation, GPT-2's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

# cublasLt.h / cublas_api.h / library_types.h (CUDA 12 and 13)
OP_N, OP_T = 0, 1
COMPUTE_32F = 68
CUDA_R_32F = 0
CUDA_DTYPES = {torch.bfloat16: 14, torch.float16: 2}
DESC_TRANSA, DESC_TRANSB, DESC_EPILOGUE, DESC_BIAS_POINTER = 3, 4, 7, 8
DESC_EPILOGUE_AUX_POINTER, DESC_EPILOGUE_AUX_LD = 11, 12
PREF_MAX_WORKSPACE_BYTES = 1
EPILOGUE_BIAS_BIT, EPILOGUE_BGRAD_BIT = 4, 16
EPILOGUE_GELU_AUX_BIAS = 32 | 128 | EPILOGUE_BIAS_BIT
EPILOGUE_DGELU = 64 | 128
EPILOGUE_DGELU_BGRAD = EPILOGUE_DGELU | EPILOGUE_BGRAD_BIT
# cuBLASLt: the aux (GELU input) leading dimension a multiple of 8; pointers 16-byte aligned
AUX_LD_MULTIPLE = 8
ALIGN_BYTES = 16
WORKSPACE_BYTES = 32 << 20
# heuristic candidates timed at a shape's first call, and timed launches per candidate
TUNE_CANDIDATES = 16
TUNE_REPEATS = 5


@dataclass(frozen=True)
class Gemm:
    """One cuBLASLt call: D (m x n, column-major, leading dimension ldd) = op(A) (m x k) @ op(B) (k x n).

    ``A`` is stored as (k x m) when ``transa`` is OP_T, else (m x k); ``B`` as (n x k) when ``transb`` is
    OP_T, else (k x n); each column-major with its leading dimension. The epilogue's bias (or bias gradient)
    has m elements; its aux matrix (the GELU input) has D's shape with leading dimension ``ldd``.
    """

    transa: int
    transb: int
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldd: int
    epilogue: int


def plan_gelu_linear(tokens: int, in_features: int, out_features: int) -> Gemm:
    """``pre = x @ w.T + b; h = gelu(pre)``: row-major x (tokens x in), w (out x in), h, pre (tokens x out).

    Row-major h is column-major (out x tokens) = w @ x.T: w's row-major (out x in) memory is column-major
    (in x out), so op T; x's is column-major (in x tokens), op N.
    """
    return Gemm(
        OP_T, OP_N, m=out_features, n=tokens, k=in_features,
        lda=in_features, ldb=in_features, ldd=out_features, epilogue=EPILOGUE_GELU_AUX_BIAS,
    )  # fmt: skip


def plan_linear_dgelu(tokens: int, hidden: int, out_features: int, bgrad: bool = False) -> Gemm:
    """``dpre = (dy @ w) * gelu'(pre); dbias = dpre.sum(0)`` for row-major dy (tokens x out), w (out x hidden)
    (the next Linear's weight), pre and dpre (tokens x hidden).

    Row-major dpre is column-major (hidden x tokens) = w.T @ dy.T: w's row-major (out x hidden) memory is
    column-major (hidden x out), which is w.T, so op N; dy's is column-major (out x tokens), op N.
    With ``bgrad`` the epilogue also writes the bias gradient (DGELU_BGRAD). It is off by default: on an H100
    that GEMM took 1.87 ms at GPT-2's shape against 1.04 ms for torch's GEMM, GELU backward and sum
    (docs/benchmarks.md).
    """
    return Gemm(
        OP_N, OP_N, m=hidden, n=tokens, k=out_features,
        lda=hidden, ldb=out_features, ldd=hidden, epilogue=EPILOGUE_DGELU_BGRAD if bgrad else EPILOGUE_DGELU,
    )  # fmt: skip


def check_plan(g: Gemm) -> None:
    """What cuBLASLt requires of the aux matrix; a violation is a planning bug, so it raises ValueError."""
    if g.ldd % AUX_LD_MULTIPLE or g.ldd < g.m:
        raise ValueError(f"cuBLASLt aux leading dimension {g.ldd}: must be >= {g.m} and a multiple of 8")


# --------------------------------------------------------------------------- the plan in torch ops


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def gelu_tanh_grad(x: torch.Tensor) -> torch.Tensor:
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    t = torch.tanh(inner)
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * math.sqrt(2.0 / math.pi) * (1.0 + 3 * 0.044715 * x * x)


def _column_major(buf: torch.Tensor, rows: int, cols: int, ld: int) -> torch.Tensor:
    """The (rows x cols) column-major matrix with leading dimension ld over the flat memory of ``buf``."""
    return buf.reshape(-1).as_strided((rows, cols), (1, ld))


def run_reference(
    g: Gemm, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, bias: torch.Tensor, aux: torch.Tensor
) -> None:
    """Run the plan with torch ops, in fp32, reading and writing the buffers as cuBLASLt would.

    GELU_AUX_BIAS writes ``aux`` (the GELU input), ``d`` (its GELU) and reads ``bias``; DGELU_BGRAD reads
    ``aux`` and writes ``d`` and ``bias`` (the bias gradient); DGELU writes only ``d``.
    """
    check_plan(g)
    a_cm = _column_major(a, g.k, g.m, g.lda).t() if g.transa == OP_T else _column_major(a, g.m, g.k, g.lda)
    b_cm = _column_major(b, g.n, g.k, g.ldb).t() if g.transb == OP_T else _column_major(b, g.k, g.n, g.ldb)
    acc = a_cm.float() @ b_cm.float()
    d_cm = _column_major(d, g.m, g.n, g.ldd)
    aux_cm = _column_major(aux, g.m, g.n, g.ldd)
    if g.epilogue == EPILOGUE_GELU_AUX_BIAS:
        pre = acc + bias.float()[:, None]
        aux_cm.copy_(pre)
        d_cm.copy_(gelu_tanh(pre))
    elif g.epilogue in (EPILOGUE_DGELU, EPILOGUE_DGELU_BGRAD):
        grad = acc * gelu_tanh_grad(aux_cm.float())
        d_cm.copy_(grad)
        if g.epilogue == EPILOGUE_DGELU_BGRAD:
            bias.copy_(grad.sum(dim=1))
    else:
        raise ValueError(f"cuBLASLt epilogue {g.epilogue}: not one of this module's")


# --------------------------------------------------------------------------- the library


def _library_path() -> str:
    """The libcublasLt torch loaded (same version as torch's own GEMMs), else the system's."""
    maps = Path("/proc/self/maps")
    if maps.exists():
        for line in maps.read_text().splitlines():
            path = line.split()[-1]
            if "libcublasLt.so" in Path(path).name:
                return path
    found = ctypes.util.find_library("cublasLt")
    if not found:
        raise RuntimeError("train.fused_mlp: libcublasLt is not loaded by torch and not on the library path")
    return found


def median_ms(fn: Callable[[], object], warmup: int, repeats: int) -> float:
    """Median GPU milliseconds of ``fn`` over ``repeats`` calls (CUDA events, each call waited for), after
    ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


class _HeuristicResult(ctypes.Structure):
    _fields_ = [
        ("algo", ctypes.c_uint64 * 8),
        ("workspace_size", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("waves_count", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


@dataclass
class _Prepared:
    desc: ctypes.c_void_p
    layouts: tuple[ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    candidates: list[_HeuristicResult]
    chosen: int = -1  # index into candidates once timed
    ms: list[float] = field(default_factory=list)  # each candidate's time, for the benchmark's report


def _declare(lib: ctypes.CDLL) -> None:
    """The C signatures, so that ctypes passes 64-bit sizes and pointers as such."""
    vp, ptr = ctypes.c_void_p, ctypes.POINTER
    sigs: dict[str, list[Any]] = {
        "cublasLtCreate": [ptr(vp)],
        "cublasLtGetStatusName": [ctypes.c_int],
        "cublasLtMatmulDescCreate": [ptr(vp), ctypes.c_int, ctypes.c_int],
        "cublasLtMatmulDescSetAttribute": [vp, ctypes.c_int, vp, ctypes.c_size_t],
        "cublasLtMatrixLayoutCreate": [
            ptr(vp),
            ctypes.c_int,
            ctypes.c_uint64,
            ctypes.c_uint64,
            ctypes.c_int64,
        ],
        "cublasLtMatmulPreferenceCreate": [ptr(vp)],
        "cublasLtMatmulPreferenceSetAttribute": [vp, ctypes.c_int, vp, ctypes.c_size_t],
        "cublasLtMatmulPreferenceDestroy": [vp],
        "cublasLtMatmulAlgoGetHeuristic": [vp] * 7 + [ctypes.c_int, ptr(_HeuristicResult), ptr(ctypes.c_int)],
        "cublasLtMatmul": [vp] * 14 + [ctypes.c_size_t, vp],
    }
    for name, argtypes in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_char_p if name == "cublasLtGetStatusName" else ctypes.c_int


class CublasLt:
    """One process's cuBLASLt handle, workspace and per-shape descriptors (created once, reused).

    The heuristic's first choice for an epilogue is not always its fastest kernel, so the first call of a
    shape times each of its candidates on the call's own buffers (every candidate writes the same outputs)
    and keeps the fastest.
    """

    def __init__(self) -> None:
        torch.cuda.init()
        # torch loads cuBLAS(Lt) lazily: a matmul makes sure its copy is the one found below
        torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")
        self.lib = ctypes.CDLL(_library_path())
        _declare(self.lib)
        self.handle = ctypes.c_void_p()
        self._check(self.lib.cublasLtCreate(ctypes.byref(self.handle)), "cublasLtCreate")
        self.prepared: dict[tuple[Any, ...], _Prepared] = {}
        self.workspace: dict[int, torch.Tensor] = {}
        self.alpha = ctypes.c_float(1.0)
        self.beta = ctypes.c_float(0.0)

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            name = self.lib.cublasLtGetStatusName(status).decode()
            raise RuntimeError(f"train.fused_mlp: {what} failed: {name} ({status})")

    def _set(self, desc: ctypes.c_void_p, attr: int, value: Any) -> None:
        self._check(
            self.lib.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.byref(value), ctypes.sizeof(value)),
            f"cublasLtMatmulDescSetAttribute({attr})",
        )

    def _layout(self, dtype: int, rows: int, cols: int, ld: int) -> ctypes.c_void_p:
        layout = ctypes.c_void_p()
        self._check(
            self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(layout), dtype, rows, cols, ld),
            "cublasLtMatrixLayoutCreate",
        )
        return layout

    def _prepare(self, g: Gemm, dtype: int, pointers: dict[int, int]) -> _Prepared:
        check_plan(g)
        desc = ctypes.c_void_p()
        self._check(
            self.lib.cublasLtMatmulDescCreate(ctypes.byref(desc), COMPUTE_32F, CUDA_R_32F), "DescCreate"
        )
        self._set(desc, DESC_TRANSA, ctypes.c_int32(g.transa))
        self._set(desc, DESC_TRANSB, ctypes.c_int32(g.transb))
        self._set(desc, DESC_EPILOGUE, ctypes.c_int32(g.epilogue))
        self._set(desc, DESC_EPILOGUE_AUX_LD, ctypes.c_int64(g.ldd))
        # the heuristic picks kernels by the pointers' alignment: give it this call's
        for attr, ptr in pointers.items():
            self._set(desc, attr, ctypes.c_void_p(ptr))
        a_rows, a_cols = (g.k, g.m) if g.transa == OP_T else (g.m, g.k)
        b_rows, b_cols = (g.n, g.k) if g.transb == OP_T else (g.k, g.n)
        layouts = (
            self._layout(dtype, a_rows, a_cols, g.lda),
            self._layout(dtype, b_rows, b_cols, g.ldb),
            self._layout(dtype, g.m, g.n, g.ldd),
        )
        pref = ctypes.c_void_p()
        self._check(self.lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "PreferenceCreate")
        size = ctypes.c_uint64(WORKSPACE_BYTES)
        self._check(
            self.lib.cublasLtMatmulPreferenceSetAttribute(
                pref, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(size), ctypes.sizeof(size)
            ),
            "PreferenceSetAttribute",
        )
        results = (_HeuristicResult * TUNE_CANDIDATES)()
        found = ctypes.c_int(0)
        self._check(
            self.lib.cublasLtMatmulAlgoGetHeuristic(
                self.handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref, TUNE_CANDIDATES,
                results, ctypes.byref(found),
            ),
            "cublasLtMatmulAlgoGetHeuristic",
        )  # fmt: skip
        self.lib.cublasLtMatmulPreferenceDestroy(pref)
        usable = [results[i] for i in range(found.value) if results[i].state == 0]
        if not usable:
            raise RuntimeError(f"train.fused_mlp: cuBLASLt has no kernel for {g}")
        return _Prepared(desc, layouts, usable)

    def _launch(self, prep: _Prepared, algo: _HeuristicResult, ptrs: tuple[int, int, int], ws: int) -> None:
        a, b, d = ptrs
        lay_a, lay_b, lay_d = prep.layouts
        stream = torch.cuda.current_stream().cuda_stream
        self._check(
            self.lib.cublasLtMatmul(
                self.handle, prep.desc, ctypes.byref(self.alpha), a, lay_a, b, lay_b,
                ctypes.byref(self.beta), d, lay_d, d, lay_d, ctypes.byref(algo.algo),
                ws, WORKSPACE_BYTES, stream,
            ),
            "cublasLtMatmul",
        )  # fmt: skip

    def _choose(self, prep: _Prepared, ptrs: tuple[int, int, int], ws: int) -> None:
        """Time every candidate (one warm-up launch, then the median of TUNE_REPEATS) and keep the fastest."""
        for algo in prep.candidates:
            prep.ms.append(median_ms(functools.partial(self._launch, prep, algo, ptrs, ws), 1, TUNE_REPEATS))
        prep.chosen = min(range(len(prep.ms)), key=prep.ms.__getitem__)

    def matmul(
        self,
        g: Gemm,
        a: torch.Tensor,
        b: torch.Tensor,
        d: torch.Tensor,
        bias: torch.Tensor,
        aux: torch.Tensor,
    ) -> None:
        for t in (a, b, d, bias, aux):
            if t.data_ptr() % ALIGN_BYTES:
                raise RuntimeError(f"train.fused_mlp: a {tuple(t.shape)} buffer is not 16-byte aligned")
        dtype = CUDA_DTYPES.get(a.dtype)
        if dtype is None:
            raise RuntimeError(f"train.fused_mlp: the GELU epilogues run in bf16 or fp16 here, not {a.dtype}")
        # an epilogue without a bias (DGELU) refuses a bias pointer: INVALID_VALUE
        uses_bias = g.epilogue & (EPILOGUE_BIAS_BIT | EPILOGUE_BGRAD_BIT)
        pointers = {
            DESC_BIAS_POINTER: bias.data_ptr() if uses_bias else 0,
            DESC_EPILOGUE_AUX_POINTER: aux.data_ptr(),
        }
        key = (g, dtype, a.device.index)
        prep = self.prepared.get(key)
        if prep is None:
            prep = self.prepared[key] = self._prepare(g, dtype, pointers)
        else:
            for attr, ptr in pointers.items():
                self._set(prep.desc, attr, ctypes.c_void_p(ptr))
        index = a.device.index or 0
        if index not in self.workspace:
            self.workspace[index] = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=a.device)
        ws = self.workspace[index].data_ptr()
        ptrs = (a.data_ptr(), b.data_ptr(), d.data_ptr())
        if prep.chosen < 0:
            self._choose(prep, ptrs, ws)
        self._launch(prep, prep.candidates[prep.chosen], ptrs, ws)


_LT: CublasLt | None = None


def lt() -> CublasLt:
    global _LT
    if _LT is None:
        _LT = CublasLt()
    return _LT


def run(
    g: Gemm, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, bias: torch.Tensor, aux: torch.Tensor
) -> None:
    """Run the plan: cuBLASLt on a CUDA device, ``run_reference`` elsewhere."""
    if a.is_cuda:
        lt().matmul(g, a, b, d, bias, aux)
    else:
        run_reference(g, a, b, d, bias, aux)


def candidate_ms() -> dict[str, list[float]]:
    """Each GEMM run so far (``epilogue:MxNxK``): every candidate's milliseconds in the heuristic's order (the
    first is its own choice), as ``CublasLt`` timed them before keeping the fastest."""
    return {
        f"{key[0].epilogue}:{key[0].m}x{key[0].n}x{key[0].k}": prep.ms for key, prep in lt().prepared.items()
    }

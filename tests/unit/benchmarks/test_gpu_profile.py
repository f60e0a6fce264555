"""profile_trainer.py's kernel families, on kernel names from real H100 profiles (results/08, 11, 12)."""

from __future__ import annotations

import os
import warnings
from types import SimpleNamespace
from typing import Any

import profile_trainer
import torch

SEEN = {
    "nvjet_sm90_tst_192x192_64x3_2x1_v_bz_coopB_NNN": "gemm",
    "nvjet_sm90_tst_256x128_64x4_1x4_h_bz_coopA_splitK_NTT": "gemm",
    "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_cga1x1x": "attention",
    "triton_red_fused__log_softmax__to_copy__unsafe_view_prepare_softmax_online_view_18": "cross_entropy",
    "void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*, unsigned int, unsigned ": "attention",
    "ce_rows": "cross_entropy",
    "triton_per_fused__to_copy_add_native_layer_norm_backward_view_9": "layer_norm",
    "triton_poi_fused_gelu_gelu_backward_view_6": "activation",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>": "optimizer",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL": "nccl",
    "triton_poi_fused_add_mul_3": "other_fused",
    "Memset (Device)": "memset_memcpy",
}


def test_kernels_fall_in_their_family() -> None:
    assert {name: profile_trainer.category(name) for name in SEEN} == SEEN


def test_busy_time_is_the_union_of_overlapping_kernels() -> None:
    assert profile_trainer.busy_union([(0.0, 10.0), (5.0, 12.0), (20.0, 21.0)]) == 13.0
    assert profile_trainer.busy_union([]) == 0.0


class FakeProfile:
    """The two calls summarize makes: events() and key_averages()."""

    def __init__(self, events: list[Any]) -> None:
        self._events = events

    def events(self) -> list[Any]:
        return self._events

    def key_averages(self) -> list[Any]:
        return []


def kernel(name: str, start: float, us: float, annotation: bool = False) -> SimpleNamespace:
    span = SimpleNamespace(start=start, elapsed_us=lambda: us)
    return SimpleNamespace(
        name=name, device_type=torch.autograd.DeviceType.CUDA, time_range=span, is_user_annotation=annotation
    )


def test_nccl_annotations_do_not_count_as_kernels() -> None:
    """torch 2.11 records "nccl:_reduce_scatter_base" on the GPU timeline over the NCCL kernel (call 18)."""
    prof = FakeProfile(
        [
            kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", 0.0, 1000.0),
            kernel(
                "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 500.0, 800.0
            ),
            kernel("nccl:_reduce_scatter_base", 500.0, 800.0, annotation=True),
        ]
    )
    out = profile_trainer.summarize(prof, steps=1, wall_s=0.002, cuda=True)
    assert out["nccl_kernel_ms_per_step"] == 0.8
    assert out["kernel_ms_per_step_by_category"] == {"gemm": 1.0, "nccl": 0.8}
    assert out["kernel_launches_per_step"] == 2
    assert out["gpu_busy_ms_per_step"] == 1.3


def test_idle_gaps_name_the_kernels_around_the_longest_gaps() -> None:
    ks = [(10.0, 20.0, "a"), (15.0, 40.0, "b"), (45.0, 50.0, "c"), (1050.0, 1060.0, "d")]
    out = profile_trainer.idle_gaps(ks, start=0.0, top=1)
    assert out["lead_ms"] == 0.01  # 10 us from the first host event to the first kernel
    assert out["gaps_ms_total"] == 1.005  # 5 us after b, 1000 us after c
    assert out["largest"] == [[1.0, 0.05, "c", "d"]]
    assert profile_trainer.idle_gaps([], start=None) == {"lead_ms": None, "gaps_ms_total": 0.0, "largest": []}


def test_summary_times_the_lead_from_the_first_host_event() -> None:
    host = SimpleNamespace(
        name="aten::mm",
        device_type=torch.autograd.DeviceType.CPU,
        time_range=SimpleNamespace(start=100.0, elapsed_us=lambda: 5.0),
    )
    prof = FakeProfile(
        [host, kernel("nvjet_x", 2100.0, 500.0), kernel("triton_poi_fused_add_0", 3100.0, 100.0)]
    )
    idle = profile_trainer.summarize(prof, steps=1, wall_s=0.004, cuda=True)["gpu_idle"]
    assert idle["lead_ms"] == 2.0
    assert idle["largest"] == [[0.5, 2.5, "nvjet_x", "triton_poi_fused_add_0"]]


def host_event(name: str, us: float, parent: Any = None) -> SimpleNamespace:
    span = SimpleNamespace(start=0.0, elapsed_us=lambda: us)
    cpu = torch.autograd.DeviceType.CPU
    return SimpleNamespace(name=name, device_type=cpu, time_range=span, cpu_parent=parent)


def test_host_syncs_are_named_by_the_ops_they_ran_under() -> None:
    step = host_event("FSDP::post_backward", 9000.0)
    item = host_event("aten::item", 3000.0, parent=step)
    dense = host_event("aten::_local_scalar_dense", 2900.0, parent=item)
    events = [
        step,
        item,
        dense,
        host_event("cudaStreamSynchronize", 2500.0, parent=dense),
        host_event("cudaStreamSynchronize", 500.0, parent=dense),
        host_event("cudaDeviceSynchronize", 1000.0),
        host_event("cudaLaunchKernel", 5.0, parent=step),
    ]
    assert profile_trainer.host_syncs(events) == [
        ["cudaStreamSynchronize < aten::_local_scalar_dense < aten::item < FSDP::post_backward", 2, 3.0],
        ["cudaDeviceSynchronize", 1, 1.0],
    ]


def test_synchronizing_ops_are_counted_by_caller_and_other_warnings_pass(monkeypatch: Any) -> None:
    modes: list[str] = []
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)

    def step() -> int:
        warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)
        warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=1)
        warnings.warn("something else", DeprecationWarning, stacklevel=1)
        return 7

    seen: dict[str, int] = {}
    where = os.path.relpath(__file__)
    with warnings.catch_warnings(record=True) as passed:
        warnings.simplefilter("always")
        assert profile_trainer.watch_syncs(step, seen) == 7
    assert modes == ["warn", "default"]
    line = step.__code__.co_firstlineno + 1
    assert seen == {f"{where}:{line}": 1, f"{where}:{line + 1}": 1}
    assert [str(w.message) for w in passed] == ["something else"]

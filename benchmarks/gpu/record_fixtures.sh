#!/usr/bin/env bash
# Records the real GPU-side outputs that the unit tests parse (health checks, NCCL path verdicts) on a GPU
# machine, into $OUT (default ./recorded): nvidia-smi's XML and text reports, the driver version, the
# kernel log's NVRM lines if readable, and an NCCL_DEBUG=INFO log of a single-node all-reduce (P2P/SHM
# between the GPUs of one host). Nothing here is a benchmark: it prints what it wrote.
#
#   bash benchmarks/gpu/record_fixtures.sh            # on the GPU machine
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-recorded}
mkdir -p "$out"
ngpu=$(nvidia-smi -L | wc -l)

nvidia-smi -q -x >"$out/nvidia-smi-q-x.xml"
nvidia-smi -q >"$out/nvidia-smi-q.txt"
{ nvidia-smi; nvidia-smi topo -m; } >"$out/nvidia-smi.txt" 2>&1
cat /proc/driver/nvidia/version >"$out/driver-version.txt" 2>&1
# XID events are NVRM lines in the kernel log; a VM may not let us read it (then the file says why).
{ dmesg 2>&1 | grep -E 'NVRM|Xid' || echo "no NVRM lines (dmesg rc=$?)"; } >"$out/dmesg-nvrm.txt"
{ command -v dcgmi && dcgmi --version; } >"$out/dcgmi.txt" 2>&1 || echo "dcgmi: not installed" >>"$out/dcgmi.txt"

# One host, all its GPUs: NCCL picks P2P (NVLink) or SHM between them; no network.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 300 \
  python3 -m torch.distributed.run --standalone --nproc-per-node "$ngpu" benchmarks/gpu/nccl_bw.py \
  >"$out/1node-x${ngpu}gpu-p2p.log" 2>&1
echo "rc=$? $out/1node-x${ngpu}gpu-p2p.log"
ls -l "$out"

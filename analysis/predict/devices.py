"""Datasheet machine models of common accelerators, one entry each: dense peak FLOP/s per dtype, memory
bandwidth and size, the architecture, and the GPU-to-GPU link. Adding a device is one DeviceSheet below; every
command, help text and error lists the devices from here, and a name is matched to its sheet by `device_sheet`
alone (the command line's options and the measured MFU's GPU name call it; the rest is handed the sheet).

Dense means without 2:4 structured sparsity: where a datasheet gives only the "with sparsity" figure,
half of it is used. fp32 is the non-tensor-core rate (tf32: tensor cores, when TF32 is allowed). A
dtype a device has no tensor-core path for is absent. Each entry names its sources (retrieved for
archzoo issues 23 and 31; third-party pages quote NVIDIA's datasheets and whitepapers, whose names are
given). GeForce parts (RTX 4090, 5090) run FP16/BF16 tensor cores with FP32 accumulation, as autocast's
GEMMs do, at half the FP16-accumulate rate: that rate is the one given. memory_bytes is the device's memory
(the larger variant where a part comes in two sizes: V100 16/32 GB), for the --predict memory check.
`derived` names each figure no cited page states as such, and the arithmetic it comes from (halving a "with
sparsity" figure is stated by the datasheets themselves, so it is not listed). The architecture is the one the
datasheet or whitepaper cited names (GA100 for the A100, GA10x for GeForce Ampere): the prediction's
per-architecture factors are reached through it. link_bandwidth is the bidirectional GPU-to-GPU bandwidth per
device where a source states it (the training schedule's all-reduce, analysis.predict.schedule), else None.

One entry is not a GPU: Google's TPU v3 chip (kind "tpu", two TensorCores per chip). Its sheet states a bf16
peak only, so it has no fp32 column; it serves the training prediction alone (zoo.predict.train), where
its figures are an extrapolation of the GPU-fitted factors (no TPU table is fitted).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..units import GB, GIB, TERA as T
NVLINK = "https://alpha-one-index.github.io/ai-infra-index/specs/networking-interconnects.html"
NVLINK_3 = "https://cyfuture.cloud/kb/gpu/how-does-nvlink-differ-between-h100-a100-and-h200"


@dataclass(frozen=True)
class DeviceSheet:
    name: str
    peak_flops: dict[str, float]          # dtype -> dense FLOP/s
    mem_bandwidth: float                  # bytes/s
    sources: tuple[str, ...] = field(default=())
    architecture: str = ""                # Volta, Turing, Ampere GA100, Ampere GA10x, Ada, Hopper, Blackwell, TPU v3
    launch_seconds: float = 5e-6          # per-kernel launch cost the roofline adds (see analysis.predict.roofline)
    memory_bytes: float | None = None     # device memory in the sheet's unit (GB = 1e9 bytes, GiB = 2^30)
    derived: tuple[str, ...] = field(default=())   # "column: the arithmetic" for figures no source states
    kind: str = "gpu"                     # "gpu" or "tpu" (a TPU chip: only the training prediction takes it)
    cores_per_chip: int = 1               # a TPU chip's TensorCores: TPU core-days = chip-days x this
    link_bandwidth: float | None = None   # bidirectional GPU-to-GPU bytes/s per device (NVLink); None: not sourced
    link_source: str = ""
    cuda_names: tuple[str, ...] = ()      # substrings of torch.cuda.get_device_name() that name this part

    @property
    def part(self) -> str:
        """Which part the sheet is, form factor and memory named (PARTS): every predicted row says it."""
        return PARTS.get(self.name, self.name)


DEVICE_SHEETS: dict[str, DeviceSheet] = {s.name: s for s in (
    DeviceSheet("H100", {"fp32": 66.9 * T, "tf32": 494.7 * T, "bf16": 989.4 * T, "fp16": 989.4 * T}, 3350e9,
                ("NVIDIA H100 Tensor Core GPU datasheet (SXM5: 80 GB HBM3, 3.35 TB/s; TF32 989 / BF16, FP16 1,979 "
                 "TFLOPS with sparsity, FP32 67)",
                 "https://glennklockwood.com/garden/processors/h100 (dense: TF32 494.7, FP16/BF16 989.4, FP32 66.9)"),
                architecture="Hopper", memory_bytes=80e9, cuda_names=("H100 80GB HBM3",),
                link_bandwidth=900 * GB, link_source=f"NVLink 4: 18 links x 50 GB/s = 900 GB/s per GPU ({NVLINK})"),
    DeviceSheet("H200", {"fp32": 66.9 * T, "tf32": 494.7 * T, "bf16": 989.4 * T, "fp16": 989.4 * T}, 4800e9,
                ("NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e, 4.8 TB/s; same GH100 compute as H100)",
                 "https://www.aiminingco.com/gpu/h200/specs (4.8 TB/s, same GH100 die)",
                 "https://glennklockwood.com/garden/processors/h100 (H200 = H100 with HBM3e)"),
                architecture="Hopper", memory_bytes=141e9, cuda_names=("H200",), link_bandwidth=900 * GB,
                link_source=f"NVLink 4, as H100 ({NVLINK}; the H200 datasheet: 900 GB/s bidirectional per GPU)"),
    DeviceSheet("A100", {"fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T}, 2039e9,
                ("NVIDIA A100 Tensor Core GPU datasheet, nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf "
                 "(80 GB SXM: 2,039 GB/s; TF32 156, BF16/FP16 312 TFLOPS dense, FP32 19.5)",
                 "https://glennklockwood.com/garden/processors/A100 (A100 80G SXM4: 80 GB HBM2e, 2.039 TB/s)"),
                architecture="Ampere GA100", memory_bytes=80e9, link_bandwidth=600 * GB,
                link_source=f"NVLink 3: 12 links x 50 GB/s bidirectional = 600 GB/s per GPU ({NVLINK_3})"),
    DeviceSheet("A100 40GB", {"fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T}, 1555e9,
                ("NVIDIA A100 Tensor Core GPU datasheet, nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf "
                 "(40 GB: same compute as the 80 GB part; TF32 156, BF16/FP16 312 TFLOPS dense, FP32 19.5)",
                 "https://glennklockwood.com/garden/processors/A100 (A100 40G SXM4: 40 GB HBM2, 1.555 TB/s; "
                 "FLOPS the same as the 80 GB part)",
                 "https://upb-pc2.atlassian.net/wiki/spaces/PC2DOK/pages/1900609/NVIDIA+A100+40GB+with+NVLINK "
                 "(40 GB HBM2, 1,555 GB/s; FP16/BF16 312 TFLOPS, 624 with sparsity)"),
                architecture="Ampere GA100", memory_bytes=40e9, link_bandwidth=600 * GB,
                link_source=f"NVLink 3, as the A100 80 GB ({NVLINK_3})"),
    DeviceSheet("V100 SXM2", {"fp32": 15.7 * T, "fp16": 125 * T}, 900e9,
                ("NVIDIA Tesla V100 datasheet (SXM2: 15.7 FP32 TFLOPS, 125 tensor TFLOPS, 16 or 32 GB HBM2, "
                 "900 GB/s; Volta: FP16 tensor cores only, no BF16 or TF32)",
                 "https://developer.nvidia.com/programming-tensor-cores-cuda-9-0 (V100 tensor cores: up to 125 "
                 "tensor TFLOPS)",
                 "https://github.com/avensun/deep-learning-benchmark (Tesla V100: 15.7 FP32, 125 FP16 TFLOPS)"),
                architecture="Volta", memory_bytes=32e9, link_bandwidth=300 * GB,
                link_source=f"NVLink 2: 6 links x 50 GB/s = 300 GB/s per GPU ({NVLINK})"),
    DeviceSheet("V100 PCIe", {"fp32": 14 * T, "fp16": 112 * T}, 900e9,
                ("NVIDIA Tesla V100 PCIe product brief PB-08744-001 (250 W; 14 FP32, 112 tensor TFLOPS)",
                 "https://www.io-tech.fi/uutinen/nvidia-esitteli-tesla-v100-pci-express-kiihdyttimen-"
                 "tieteelliseen-laskentaan/ (V100 PCIe at about 1370 MHz: 14 FP32, 112 tensor TFLOPS, 16 GB HBM2, "
                 "900 GB/s)"),
                architecture="Volta", memory_bytes=32e9),
    DeviceSheet("L4", {"fp32": 30.3 * T, "tf32": 60 * T, "bf16": 121 * T, "fp16": 121 * T}, 300e9,
                ("NVIDIA L4 Tensor Core GPU datasheet (FP32 30.3 TFLOPS; TF32 120, FP16/BF16 242 TFLOPS with "
                 "sparsity; 24 GB GDDR6, 300 GB/s)",
                 "https://store.sourcecode.com/en-us/bg-bucket-compare/125/9820 (TF32 120 with sparsity, 300 GB/s)",
                 "https://grokipedia.com/page/NVIDIA_L4_vs_L40S (FP16 242 with sparsity, 300 GB/s)"),
                architecture="Ada", memory_bytes=24e9),
    DeviceSheet("T4", {"fp32": 8.1 * T, "fp16": 65 * T}, 320e9,
                ("NVIDIA T4 Tensor Core GPU datasheet (FP32 8.1 TFLOPS, mixed-precision FP16/FP32 65 TFLOPS, "
                 "16 GB GDDR6, 320 GB/s; Turing: no BF16 or TF32 tensor cores)",
                 "https://sysrqmts.com/en/gpus/nvidia/tesla/t4 (320.0 GB/s, FP16 65.13, FP32 8.141)"),
                architecture="Turing", memory_bytes=16e9),
    DeviceSheet("RTX 4090", {"fp32": 82.6 * T, "tf32": 82.6 * T, "bf16": 165.2 * T, "fp16": 165.2 * T}, 1008e9,
                ("NVIDIA Ada GPU architecture whitepaper (RTX 4090: 82.6 FP32 TFLOPS, 1,008 GB/s GDDR6X)",
                 "https://waredb.com/processor/nvidia-geforce-rtx-4090 (FP16/BF16 tensor 165.15 dense, TF32 82.58)",
                 "https://www.thefpsreview.com/gpu-family/nvidia-geforce-rtx-4090-gpu-family-specifications "
                 "(1008 GB/s)"),
                architecture="Ada", memory_bytes=24e9),
    DeviceSheet("RTX 3090", {"fp32": 35.6 * T, "tf32": 35.6 * T, "bf16": 71 * T, "fp16": 71 * T}, 936e9,
                ("NVIDIA Ampere GA102 GPU architecture whitepaper, appendix A (GeForce RTX 3090)",
                 "https://holynerdvana.blogspot.com/2022/10/nvidia-geforce-rtx-3090-specifications.html (FP32 35.6 "
                 "TFLOPS; FP16 tensor 142 dense / 285 sparse, the FP16-accumulate rate; 24 GB, 936 GB/s)",
                 "https://cuttingedgegamer.com/2022/12/ (RTX 3090: FP32 35.58 TFLOPS, 936.2 GB/s, 24 GB)",
                 "https://hmc-tech.com/gpu/nvidia-geforce-rtx-4090-d-vs-nvidia-geforce-rtx-3090-ti (the GA102 "
                 "GeForce ratios, RTX 3090 Ti: FP16 tensor 159.99 with FP16 accumulate, 80 with FP32 accumulate, "
                 "TF32 40 = its FP32)"),
                architecture="Ampere GA10x", memory_bytes=24e9,
                derived=("bf16, fp16 71: the stated 142 (FP16 accumulate) / 2, the GA102 GeForce FP32-accumulate "
                         "rate (hmc-tech's RTX 3090 Ti: 159.99 -> 80)",
                         "tf32 35.6: 71 / 2, TF32 at half the FP16/FP32-accumulate rate (hmc-tech's RTX 3090 Ti: "
                         "80 -> 40)")),
    DeviceSheet("RTX 5090", {"fp32": 104.8 * T, "tf32": 104.8 * T, "bf16": 209.6 * T, "fp16": 209.6 * T}, 1792e9,
                ("https://www.spheron.network/blog/nvidia-rtx-5090-specs/ (32 GB GDDR7, 1,792 GB/s; 21,760 CUDA "
                 "cores; FP16 tensor 838.4 TFLOPS sparse, the FP16-accumulate rate)",
                 "https://pocketmags.com/linux-format-magazine/may-2025/articles/nvidia-geforce-rtx-5090 "
                 "(21,760 shaders, 2,407 MHz boost, 104 FP32 TFLOPS, 838 FP16, 1,792 GB/s)"),
                architecture="Blackwell", memory_bytes=32e9,
                derived=("fp32 104.8: 21,760 shaders x 2 FLOP x 2.407 GHz (both stated; the pages round it to 104 "
                         "and ~105.2)",
                         "bf16, fp16 209.6: the stated 838.4 / 2 (dense) / 2 (FP32 accumulate at half the FP16-"
                         "accumulate rate on GeForce parts, as the RTX 4090's 660.6 sparse -> 165.2)",
                         "tf32 104.8: 209.6 / 2, TF32 at half the FP16/FP32-accumulate rate")),
    DeviceSheet("H100 PCIe", {"fp32": 51 * T, "tf32": 378 * T, "bf16": 756.5 * T, "fp16": 756.5 * T}, 2000e9,
                ("https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html (NVIDIA's H100 table, PCIe column: "
                 "FP32 51; TF32 756, BF16/FP16 1,513 TFLOPS 'shown with sparsity, specifications 1/2 lower "
                 "without'; 80 GB HBM2e, 2,000 GB/s; 300-350 W)",
                 "NVIDIA H100 PCIe GPU product brief PB-11133-001_v02, https://manuals.plus/m/56b0c3ef7d0a1c470c0a"
                 "f8f05a0bd1f29a778007472ba941201fbbb185c9bccd (350 W, memory bandwidth greater than 2,000 GB/s)"),
                architecture="Hopper", memory_bytes=80e9),
    DeviceSheet("L40S", {"fp32": 91.6 * T, "tf32": 183 * T, "bf16": 366.5 * T, "fp16": 366.5 * T}, 864e9,
                ("https://www.mullet.se/product.html?product_id=355414 (NVIDIA's L40/L40S table: L40S FP32 91.6; "
                 "TF32 183 dense, 366 with sparsity; BF16/FP16 733 with sparsity; 48 GB GDDR6, 864 GB/s; 350 W)",
                 "https://hmc-tech.com/gpu/nvidia-l40s-vs-nvidia-t40 (L40S, dense: FP32 91.61, TF32 183.21, "
                 "FP16 366.43 tensor with FP32 accumulate, BF16 366.43: a professional part, FP32 accumulate at "
                 "the full rate)"),
                architecture="Ada", memory_bytes=48e9),
    DeviceSheet("RTX PRO 6000 Max-Q", {"fp32": 110.1 * T, "tf32": 220.2 * T, "bf16": 440.4 * T, "fp16": 440.4 * T},
                1792e9,
                ("https://technical.city/en/video/RTX-4000-SFF-Ada-Generation-vs-RTX-PRO-6000-Blackwell-Max-Q "
                 "(RTX PRO 6000 Blackwell Max-Q: 24,064 CUDA cores, 2,288 MHz boost, 110.1 TFLOPS FP32, 752 "
                 "tensor cores, 300 W)",
                 "https://hmc-tech.com/gpu/nvidia-rtx-pro-6000-blackwell-vs-amd-radeon-pro-duo-polaris (the 600 W "
                 "RTX PRO 6000 Blackwell, same GB202 with 24,064 cores: FP32 125.95, TF32 251.9, FP16 503.8 tensor "
                 "with FP32 accumulate, BF16 503.8, dense; 96 GB GDDR7)",
                 "https://gpu.name/posts/nvidia-unveils-rtx-pro-6000-blackwell-gpu-with-24-064-cores-and-96gb-memory "
                 "(96 GB GDDR7, 512-bit, 1,792 GB/s; the Max-Q shares the memory configuration, 28 Gbps)"),
                architecture="Blackwell", memory_bytes=96e9,
                derived=("tf32 220.2, bf16 and fp16 440.4: the Max-Q's stated FP32 110.1 x 2 and x 4, the ratios "
                         "stated for the 600 W RTX PRO 6000 on the same die (251.9 / 125.95 = 2, 503.8 / 125.95 = "
                         "4); no page found states the Max-Q's tensor peaks",)),
    DeviceSheet("TPU v3", {"bf16": 123 * T}, 900e9,
                ("https://cloud.google.com/tpu/docs/v3 (System architecture: each v3 chip contains two TensorCores, "
                 "each with two MXUs, a vector unit and a scalar unit; peak compute per chip 123 teraflops (bf16); "
                 "HBM2 capacity and bandwidth 32 GiB, 900 GBps)",),
                architecture="TPU v3", memory_bytes=32 * GIB, kind="tpu", cores_per_chip=2),
)}


# each sheet's part, as its sources name it: which A100 or H100 (SXM or PCIe, 40 or 80 GB) a row is for
PARTS = {"H100": "H100 SXM5 80GB", "H200": "H200 SXM 141GB", "A100": "A100 SXM4 80GB", "A100 40GB": "A100 SXM4 40GB",
         "V100 SXM2": "V100 SXM2 (16 or 32 GB: the same compute and bandwidth)", "V100 PCIe": "V100 PCIe",
         "L4": "L4 24GB", "T4": "T4 16GB", "RTX 4090": "GeForce RTX 4090 24GB", "RTX 3090": "GeForce RTX 3090 24GB",
         "RTX 5090": "GeForce RTX 5090 32GB", "H100 PCIe": "H100 PCIe 80GB", "L40S": "L40S 48GB",
         "RTX PRO 6000 Max-Q": "RTX PRO 6000 Blackwell Max-Q 96GB", "TPU v3": "Cloud TPU v3 chip"}

# the usual part under a shorter name, as typed (without case or spaces)
ALIASES = {"a10080gb": "A100", "v100": "V100 SXM2", "h100sxm": "H100", "rtxpro6000blackwellmax-q": "RTX PRO 6000 Max-Q",
           "tpuv3chip": "TPU v3"}


def device_sheet(name: str) -> DeviceSheet:
    """The one lookup by name: the sheet of a part as typed, matched without case or spaces ("h100", "rtx4090",
    "a100 80gb"), or as the CUDA driver names it (torch.cuda.get_device_name(), "NVIDIA H100 80GB HBM3": a sheet's
    cuda_names); ValueError otherwise. Called where a name comes in (zoo.options.predict_devices for the command
    line, analysis.timing.peak for the GPU a run timed on); everything after takes the sheet."""
    wanted = name.replace(" ", "").lower()
    for sheet in DEVICE_SHEETS.values():
        if ALIASES.get(wanted) == sheet.name or sheet.name.replace(" ", "").lower() == wanted \
                or any(part in name for part in sheet.cuda_names):
            return sheet
    raise ValueError(f"unknown device {name!r}; datasheets: {', '.join(DEVICE_SHEETS)}")


def listed(kind: str) -> str:
    """The devices of a kind ("gpu", "tpu") as help texts list them: H100, 'H100 PCIe', ..."""
    return ", ".join(f"'{s.name}'" if " " in s.name else s.name for s in DEVICE_SHEETS.values() if s.kind == kind)


def sheet_peak(sheet: DeviceSheet, dtype: str, tf32: bool = False) -> float:
    """Dense peak for the dtype; fp32 on tensor cores when TF32 is allowed; ValueError if the device lacks it."""
    column = "tf32" if dtype == "fp32" and tf32 and "tf32" in sheet.peak_flops else dtype
    if column not in sheet.peak_flops:
        raise ValueError(f"{sheet.name} has no {dtype} tensor-core path in its datasheet")
    return sheet.peak_flops[column]

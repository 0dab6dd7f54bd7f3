"""Stand-ins for the machine's peak and bandwidth probes (zoo.runs.peaks), for tests of what a probe under load
leads to."""


def fake_probes(monkeypatch, probes: list[tuple[float, float]]):
    """Stand in for the peak and bandwidth probes on a 2-core machine: each GEMM probe gives the next (GEMM rate,
    others' share of the 2 cores) of `probes`. Returns the probes not taken yet."""
    left = iter(probes)

    def fake_probe(device, dtype, threads=None):
        flops, share = next(left)
        return {"peak_flops": flops, "peak_kernel": "mm_fake", "peak_foreign_cpu_share": share}

    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops", fake_probe)
    monkeypatch.setattr("zoo.runs.peaks.measure_bandwidth", lambda device, threads=None: {"mem_bandwidth": 5e9})
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    return left

"""Benchmarks: side-by-side ratios against the alternative a user would otherwise write.

Run one with ``python -m bench.p1_overhead [--quick]`` (p2_checkpoint_bytes,
p3_context_growth, p4_resume_cost, p5_scaleout, p6_crash_loop), or all of them with
``python -m bench``.
They are not part of the test suite; ``tests/bench`` runs each at a tiny size.
"""

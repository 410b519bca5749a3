"""BLAS set-up before numpy loads (stc_mlir.blas)."""

from __future__ import annotations

import subprocess
import sys

from stc_mlir import blas


def test_single_threaded_keeps_the_users_settings():
    environ = {"OMP_NUM_THREADS": "4"}
    blas.single_threaded(environ)
    assert environ == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "1"}


def test_a_tool_runs_blas_on_one_thread_and_names_its_kernels():
    """A process set up as the tools are (`single_threaded` before numpy) runs one BLAS
    thread, and `kernels` names what runs."""
    code = ("import os\nfor v in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):\n"
            "    os.environ.pop(v, None)\n"
            "from stc_mlir import blas\nblas.single_threaded()\nimport numpy, threadpoolctl\n"
            "print([p['num_threads'] for p in threadpoolctl.threadpool_info() if p['user_api'] == 'blas'],"
            " blas.kernels())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    threads, kernels = done.stdout.split(" ", 1)
    assert threads == "[1]"
    assert kernels.strip() not in ("", "unknown")

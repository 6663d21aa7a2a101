"""rollout.c under the sanitizers: a C host runs mbs_rollout on generated tables (one run failing, the
records among the outputs) on 1 and 4 threads, compiled with -std=c99 -pedantic -Wall -Wextra -Werror
and run under the address and undefined-behaviour sanitizers, then under the thread sanitizer (no data
race between the threads): no diagnostics, and the two thread counts write the same bytes."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import mbsfmu
from mbsfmu.engine.native import build
from mbsfmu.engine.native.tables import c_source
from tests.support.paths import MODELS

C_HOST = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mbs_rollout.h"
#include "tables.c"
#define RUNS 6
#define STEPS 25
static int roll(mbs_sim *s, int threads, double *x, double *y, int32_t *st, int32_t *nd, long long *stats,
                char *msgs, const double *x0, const int32_t *sel, int n_sel, const int32_t *bodies)
{
    char err[512];
    mbs_rollout_args a;
    size_t n;
    void *work;
    int rc;
    memset(&a, 0, sizeof a);
    a.n_runs = RUNS; a.n_steps = STEPS; a.dt = 0.01; a.x0 = x0;
    a.n_sel = n_sel; a.sel = sel; a.n_b = 1; a.bodies = bodies;
    a.x_out = x; a.y_out = y; a.status = st; a.n_done = nd; a.stats = stats; a.msgs = msgs; a.n_msg = 128;
    n = mbs_rollout_work(&s, 1, &a, threads);
    if (!n) return 90;
    work = malloc(n);
    rc = mbs_rollout(&s, 1, &a, threads, work, n, err, sizeof err);
    free(work);
    if (rc) { printf("%s\n", err); return 91; }
    return 0;
}
int main(void) {
    char err[512], m1[RUNS * 128], m4[RUNS * 128];
    size_t n = mbs_sim_size(m_ti, m_n_ti, m_tf, m_n_tf, err, sizeof err);
    mbs_sim *s = mbs_sim_init(malloc(n), n, m_ti, m_n_ti, m_tf, m_n_tf, err, sizeof err);
    mbs_sizes z = mbs_sim_sizes(s);
    int nx = z.nx, r, k, rc, n_sel = 4;
    int32_t sel[4], bodies[1] = {1}, st1[RUNS], st4[RUNS], nd1[RUNS], nd4[RUNS];
    long long s1[2 * RUNS], s4[2 * RUNS];
    size_t nxo = (size_t)RUNS * (STEPS + 1) * (size_t)nx, nyo = (size_t)RUNS * (STEPS + 1) * 4;
    double *x0 = malloc(sizeof(double) * RUNS * (size_t)nx), *x1 = malloc(8 * nxo), *x4 = malloc(8 * nxo);
    double *y1 = malloc(8 * nyo), *y4 = malloc(8 * nyo);
    sel[0] = 0; sel[1] = z.nq + 2 * z.nv + z.n_u + 15;                  /* q[0], KE */
    sel[2] = z.nq + 2 * z.nv + z.n_u + 20; sel[3] = z.nq + 2 * z.nv + z.n_u + 20 + 48;  /* body 1's records */
    for (r = 0; r < RUNS; r++) {
        memcpy(x0 + (size_t)r * nx, mbs_sim_x(s), sizeof(double) * (size_t)nx);
        x0[(size_t)r * nx] += 0.01 * r;
    }
    x0[3 * (size_t)nx + z.nq] = 1e160;                                  /* run 3 fails */
    if ((rc = roll(s, 1, x1, y1, st1, nd1, s1, m1, x0, sel, n_sel, bodies))) return rc;
    if ((rc = roll(s, 4, x4, y4, st4, nd4, s4, m4, x0, sel, n_sel, bodies))) return rc;
    if (memcmp(x1, x4, 8 * nxo) || memcmp(y1, y4, 8 * nyo) || memcmp(st1, st4, sizeof st1) ||
        memcmp(nd1, nd4, sizeof nd1) || memcmp(s1, s4, sizeof s1)) return 2;
    for (r = 0; r < RUNS; r++) {
        if ((r == 3) != (st1[r] != MBS_OK)) { printf("run %d: %d %s\n", r, st1[r], m1 + 128 * r); return 3; }
        for (k = 0; k <= STEPS; k++)
            if ((r != 3 || k <= nd1[r]) && !isfinite(x1[((size_t)r * (STEPS + 1) + (size_t)k) * (size_t)nx])) return 4;
    }
    printf("%d %d %s\n", st1[3], nd1[3], m1 + 3 * 128);
    free(x0); free(x1); free(x4); free(y1); free(y4);
    free(s);
    return 0;
}
"""


def _build_and_run(cc, tmp_path, sanitize: str) -> subprocess.CompletedProcess:
    exe = tmp_path / f"host_{sanitize.replace(',', '_')}"
    res = subprocess.run(
        [
            cc,
            "-std=c99",
            "-pedantic",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-g",
            "-ffp-contract=off",
            f"-fsanitize={sanitize}",
            "-fno-sanitize-recover=all",
            f"-I{build.HERE}",
            f"-I{tmp_path}",
            str(tmp_path / "host.c"),
            *[str(build.HERE / s) for s in (*build.SOURCES, *build.HOST_SOURCES)],
            "-lm",
            "-lpthread",
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.integration
@pytest.mark.parametrize("sanitize", ["address,undefined", "thread"])
def test_rollout_c_sanitized_and_the_same_on_any_thread_count(sanitize, tmp_path):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no system C compiler for the sanitizer build (the core itself builds with zig)")
    model = mbsfmu.load_model(MODELS / "spring_pendulum.yaml")
    (tmp_path / "tables.c").write_text(c_source(model, "m"))
    (tmp_path / "host.c").write_text(C_HOST)
    run = _build_and_run(cc, tmp_path, sanitize)
    if sanitize == "thread" and "FATAL: ThreadSanitizer" in run.stderr:  # e.g. a kernel's memory layout it rejects
        pytest.skip(f"the thread sanitizer cannot run here: {run.stderr.strip().splitlines()[0]}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr == ""
    status, n_done, message = run.stdout.split(" ", 2)
    assert int(status) == 1 and int(n_done) == 0 and "non-finite state" in message  # MBS_DISCARD, first step

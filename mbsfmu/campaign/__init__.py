"""Campaigns: many runs of one scenario with dispersed or gridded parameters, executed on
dask.distributed (or serially), collected by the client into one table with statistics.

    from mbsfmu.campaign import run_montecarlo
    result = run_montecarlo("scenarios/spring_pendulum.yaml", runs=200, seed=1, out="mc",
                            dispersions={"body.mass.mass": Normal(0.7, 0.02)}, workers=2)

Modules: ``dispersions`` (distributions and designs), ``seeding`` (per-run generators),
``points`` (parameter paths), ``runner`` (one run on a worker), ``execution`` (serial, Dask,
cluster faults), ``provision`` (what a worker must have, proved before the first run),
``table`` (journal, Parquet/CSV, resume), ``statistics``, ``picture`` (campaign.png),
``engine`` (the campaign loop), ``command`` (``mbsfmu montecarlo``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .dispersions import MonteCarlo
    from .engine import CampaignResult

# imported on first use: the command line imports ``sweep`` and ``command`` for their subparsers,
# which must not load scipy (dispersions) or the campaign loop (a run's start-up)
LAZY = {
    **dict.fromkeys(("Choice", "Grid", "MonteCarlo", "Normal", "Uniform", "parse_campaign"), ".dispersions"),
    **dict.fromkeys(("CampaignResult", "run_campaign"), ".engine"),
    **dict.fromkeys(("Dask", "Serial"), ".execution"),
}


__getattr__ = lazy_names(__name__, LAZY)


__all__ = [
    "CampaignResult",
    "Choice",
    "Dask",
    "Grid",
    "MonteCarlo",
    "Normal",
    "Serial",
    "Uniform",
    "montecarlo_design",
    "parse_campaign",
    "run_campaign",
    "run_montecarlo",
]


def montecarlo_design(
    scenario: str | Path, runs: int, seed: int, dispersions: dict | None = None, campaign_file: str | Path | None = None
) -> tuple[MonteCarlo, list[str]]:
    """The design and chosen outputs: the scenario's ``campaign:`` section, overridden per path by
    a campaign file's, overridden by ``dispersions`` ({path: Normal/Uniform/Choice})."""
    from ..errors import InputError
    from .dispersions import MonteCarlo, parse_campaign

    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise InputError(f"runs must be a positive integer, got {runs!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    disp, outputs = parse_campaign(scenario, ("campaign",))
    if campaign_file is not None:
        more, more_outputs = parse_campaign(campaign_file)
        disp, outputs = {**disp, **more}, more_outputs or outputs
    disp = {**disp, **(dispersions or {})}
    if not disp:
        raise InputError(
            f"no dispersions: declare them in {scenario} (campaign: {{dispersions: ...}}) or in a "
            "campaign file (--campaign FILE)"
        )
    return MonteCarlo(disp, runs, seed), outputs


def run_montecarlo(
    scenario: str | Path,
    runs: int,
    seed: int,
    out: str | Path,
    *,
    dispersions: dict | None = None,
    campaign_file: str | Path | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    serial: bool = False,
    cluster_timeout: float | None = None,
    run_timeout: float | None = None,
    batch: int | None = None,
    rerun: str | tuple[int, ...] | None = None,
    resume: bool = False,
    duration: float | None = None,
    outputs: list[str] | None = None,
    trajectories: bool = False,
    progress: bool = True,
    stop=None,
    batched: bool = True,
) -> CampaignResult:
    """A Monte Carlo campaign of ``runs`` runs seeded by ``seed`` (see ``montecarlo_design``) on a
    Dask cluster (``scheduler`` address, or a LocalCluster of ``workers`` processes) or, with
    ``serial``, in this process (``cluster_timeout`` [s]: see ``Dask``; ``run_timeout`` [s]: see
    ``run_campaign``; ``batch``: runs per Dask task, see ``Dask``; ``scheduler`` may also be an existing
    ``distributed.Client``; ``rerun``: ``"failed"`` or run indices to run again with their trajectories,
    see ``run_campaign``; ``batched``: see ``run_campaign``); writes ``out``
    (campaign.parquet/.csv, statistics.csv, campaign.png, runs.jsonl, campaign.json;
    trajectories/run_NNNN.csv with ``trajectories``)."""
    design, file_outputs = montecarlo_design(scenario, runs, seed, dispersions, campaign_file)
    from .engine import run_campaign
    from .execution import DEFAULT_TIMEOUT, Dask, Serial

    execution = Serial() if serial else Dask(scheduler, workers, cluster_timeout or DEFAULT_TIMEOUT, batch)
    return run_campaign(
        scenario,
        design,
        out,
        duration=duration,
        outputs=outputs or file_outputs or None,
        trajectories="trajectories/run_{run:04d}.csv" if trajectories or rerun is not None else None,
        execution=execution,
        resume=resume,
        progress=progress,
        kind="montecarlo",
        stop=stop,
        run_timeout=run_timeout,
        rerun=rerun,
        batched=batched,
    )

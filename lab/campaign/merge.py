"""`lab campaign merge DIR… --out DIR`: the campaign folders of one night's shards (or any
campaigns) joined into one folder: every run folder under `runs/` (hard links where the
file system allows, else copies), one campaign.json whose runs are renumbered in order,
and one summary. The folders merged are left as they were.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.campaign.summary import CampaignSummary, read_campaign, write_campaign
from lab.campaign.tasks import RunRecord
from lab.ground.errors import InputError, UsageError
from lab.ground.files import user_folder

__all__ = ["merge_campaigns"]


def _link_or_copy(source: str, dest: str) -> None:
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


def _place(source: Path, out_dir: Path) -> str:
    """Copy one run folder under out_dir/runs/<scenario>/, renamed if the name is taken."""
    scenario = source.parent.name
    dest = out_dir / "runs" / scenario / source.name
    number = 1
    while dest.exists():
        dest = out_dir / "runs" / scenario / f"{source.name}.m{number}"
        number += 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, dest, symlinks=True, copy_function=_link_or_copy)
    return str(dest.relative_to(out_dir))


def _records(folder: Path, raw: dict[str, Any]) -> list[RunRecord]:
    """The campaign's run records, each with its run folder there to be merged."""
    path = folder / "campaign.json"
    runs = raw.get("runs", [])
    if not isinstance(runs, list):
        raise InputError(f'{path}: "runs" must be a list of run records')
    records: list[RunRecord] = []
    for number, entry in enumerate(runs, start=1):
        try:
            records.append(RunRecord.from_json(entry))
        except (TypeError, ValueError, AttributeError) as exc:
            detail = str(exc).replace("RunRecord.__init__() ", "")
            raise InputError(f"{path}: run record {number} is not one: {detail}") from None
    for record in records:
        if record.folder is not None:
            user_folder(folder / record.folder, "run folder")
    return records


def merge_campaigns(folders: list[Path], out_dir: Path) -> CampaignSummary:
    if not folders:
        raise UsageError("name at least one campaign folder to merge")
    if out_dir.exists() or out_dir.is_symlink():
        if not out_dir.is_dir():
            raise UsageError(f"{out_dir}: a file, not a folder: merge into a new folder")
        if any(out_dir.iterdir()):
            raise UsageError(f"{out_dir} exists and is not empty: merge into a new folder")
    # Every folder read and checked before anything is written.
    raws = [(folder, read_campaign(folder)) for folder in folders]
    checked = [(folder, raw, _records(folder, raw)) for folder, raw in raws]
    records: list[RunRecord] = []
    cells: list[dict[str, str]] = []
    skipped: list[str] = []
    for folder, raw, found in checked:
        for record in found:
            placed = None if record.folder is None else _place(folder / record.folder, out_dir)
            records.append(replace(record, number=len(records) + 1, folder=placed))
        cells.extend(c for c in raw.get("cells", ()) if c not in cells)
        skipped.extend(s for s in raw.get("skipped", ()) if s not in skipped)
    first = raws[0][1]
    request = {
        **first.get("request", {}),
        "shard": ", ".join(str(r.get("request", {}).get("shard", "?")) for _, r in raws),
        "merged_from": [str(f) for f, _ in raws],
    }
    summary = CampaignSummary(
        request=request,
        started=min(str(r.get("started", "")) for _, r in raws),
        cells=tuple(cells),
        skipped=tuple(skipped),
        records=tuple(records),
        ended=max(str(r.get("ended") or "") for _, r in raws) or None,
        elapsed_s=max(float(r.get("elapsed_s", 0.0)) for _, r in raws),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    write_campaign(out_dir, summary)
    return summary

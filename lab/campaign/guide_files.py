"""A campaign folder's record of its guide (lab.campaign.guide):

guide.jsonl      every proposal and observation, in the order they were made: the
                 decisions follow from it (`replay`)
coverage.jsonl   one line a run, in the order runs were recorded: the run, its cell, how
                 it was made (`origin`, `parent`), its verdict, its behaviours (`features`),
                 those new to its cell (`new`), and the distinct behaviours so far
                 (`behaviours` in the campaign, `cell_behaviours` in its cell)
corpus/<run>.json  each run that reached new behaviour: how it was made, what was new, its
                 folder, and its whole spec (what the next runs are mutated from)
specs/<run>.json the spec each guided run was given (`lab run --spec`)

files = GuideFiles(campaign_dir)
task = files.proposed(proposal)                 logged; the Task that runs it
point = files.observed(guide, record, behaviours)   observed, logged, written
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lab.campaign.behaviour import behaviour_of
from lab.campaign.coverage import CoveragePoint, cell_of, read_points
from lab.campaign.guide import Guide, Proposal, Seen
from lab.campaign.plan import Draw
from lab.campaign.tasks import RunRecord, Task
from lab.ground.errors import InputError
from lab.ground.files import write_json

__all__ = ["GuideFiles", "observe_line", "propose_line", "replay"]


class GuideFiles:
    def __init__(self, campaign_dir: Path) -> None:
        self.dir = campaign_dir
        self.log = campaign_dir / "guide.jsonl"
        self.coverage = campaign_dir / "coverage.jsonl"
        self.corpus = campaign_dir / "corpus"

    def _append(self, path: Path, line: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, separators=(",", ":")) + "\n")

    def proposed(self, proposal: Proposal) -> Task:
        """Log the proposal; the task that runs it."""
        self._append(self.log, propose_line(proposal))
        spec = None if proposal.spec is None else proposal.spec.to_json()
        return Task(
            proposal.number,
            proposal.cell,
            proposal.seed,
            spec=spec,
            origin=proposal.origin,
            parent=proposal.parent,
        )

    def observed(self, guide: Guide, record: RunRecord) -> CoveragePoint:
        """Tell the guide what the recorded run showed; log it, and write its coverage point
        and (when it joined the corpus) its corpus entry."""
        seen = Seen(
            record.number,
            record.cell,
            self._behaviours(record),
            record.verdict,
            record.folder,
            record.seconds,
        )
        observation = guide.observe(seen)
        self._append(self.log, observe_line(seen))
        self._append(self.coverage, observation.point.to_json())
        if observation.entry is not None:
            self.corpus.mkdir(parents=True, exist_ok=True)
            write_json(self.corpus / f"{observation.entry.run}.json", observation.entry.to_json())
        return observation.point

    def _behaviours(self, record: RunRecord) -> frozenset[str]:
        """The run's behaviours; none (said on stderr) when its files cannot be read, so one
        odd run folder does not end a night's campaign."""
        if record.folder is None:
            return frozenset()
        try:
            return behaviour_of(self.dir / record.folder)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            print(f"lab: run {record.number}: behaviours unreadable: {exc}", file=sys.stderr)
            return frozenset()

    def read_log(self, skip: int = 0) -> list[dict[str, Any]]:
        """guide.jsonl's lines after the first `skip` (a torn last line is left for later)."""
        if not self.log.is_file():
            return []
        lines = self.log.read_text(encoding="utf-8").split("\n")[:-1]  # whole lines only
        return [json.loads(line) for line in lines[skip:] if line]

    def points(self) -> list[CoveragePoint]:
        return read_points(self.coverage)


def propose_line(proposal: Proposal) -> dict[str, Any]:
    return {"propose": proposal.to_json()}


def observe_line(seen: Seen) -> dict[str, Any]:
    return {"observe": seen.to_json()}


def replay(guide: Guide, lines: Iterable[Mapping[str, Any]]) -> list[Proposal]:
    """Feed a guide.jsonl's lines to `guide` in their order; every proposal it makes must be
    the one recorded (InputError otherwise: the log is not this guide's, or the lab changed).
    Returns the proposals."""
    made: list[Proposal] = []
    for line in lines:
        if "propose" in line:
            said = line["propose"]
            number = int(said["run"])
            draw = Draw(number, cell_of(said["cell"]), int(said["seed"]))
            proposal = guide.propose(number, draw)
            if (proposal.origin, proposal.digest) != (said["origin"], said["spec"]):
                raise InputError(
                    f"guide.jsonl: run {number} was {said['origin']} {said['spec']}, "
                    f"this guide makes {proposal.origin} {proposal.digest}: not its log"
                )
            made.append(proposal)
        elif "observe" in line:
            guide.observe(Seen.from_json(line["observe"]))
    return made

"""The bug zoo as data: every bug applies to a scratch copy of today's tree and the copy
still imports; a bug that no longer applies says so; bad bug files are refused naming the
field; scratch copies never touch the tree and are removed, also after a SIGKILL."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from lab.bench.scratch import PREFIX, BugDoesNotApply, ScratchRoot, apply_bug, reap_scratch
from lab.bench.zoo import Bug, Replacement, bugs_named, load_bug, load_zoo, parse_bug
from lab.ground.errors import InputError, UsageError

ROOT = Path(__file__).resolve().parent.parent
BUGS = load_zoo()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _module(file: str) -> str:
    return file.removesuffix(".py").replace("/", ".")


def test_the_zoo_holds_at_least_twelve_bugs_over_both_designs() -> None:
    designs = {b.design for b in BUGS}
    assert len(BUGS) >= 12 and designs == {"replicated-group", "active-passive"}
    assert [b.name for b in BUGS] == sorted(b.name for b in BUGS)
    assert any(b.cheap for b in BUGS) and not all(b.cheap for b in BUGS)


def test_the_manual_describes_every_bug_of_the_zoo() -> None:
    manual = (ROOT / "docs" / "detection.md").read_text(encoding="utf-8")
    missing = [b.name for b in BUGS if f"| `{b.name}` |" not in manual]
    assert not missing, f"docs/detection.md does not describe {missing}"


@pytest.mark.parametrize("bug", BUGS, ids=[b.name for b in BUGS])
def test_the_bug_applies_to_todays_tree_and_its_copy_imports(bug: Bug, tmp_path: Path) -> None:
    originals = {r.file: _digest(ROOT / r.file) for r in (*bug.replacements, *bug.canaries)}
    # The bug alone (its canaries may rewrite its new text), on a copy of the files it touches.
    for file in originals:
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_bytes((ROOT / file).read_bytes())
    apply_bug(tmp_path, bug, canaries=False)
    for rep in bug.replacements:
        assert rep.new in (tmp_path / rep.file).read_text(encoding="utf-8")
    with ScratchRoot() as root:
        tree = root.tree("mutant", bug)  # BugDoesNotApply, naming the file, when stale
        for rep in bug.canaries:
            assert rep.new in (tree.path / rep.file).read_text(encoding="utf-8")
        for file in originals:
            text = (tree.path / file).read_text(encoding="utf-8")
            assert text != (ROOT / file).read_text(encoding="utf-8")
        modules = sorted({_module(r.file) for r in (*bug.replacements, *bug.canaries)})
        check = (
            "import importlib, sys\n"
            f"for name in {modules!r}:\n"
            "    print(importlib.import_module(name).__file__)\n"
        )
        argv, where = tree.python("-c", check)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, **where)
        assert done.returncode == 0, f"the mutated copy does not import: {done.stderr}"
        assert sorted(done.stdout.split()) == sorted(str(tree.path / r) for r in originals)
    assert {f: _digest(ROOT / f) for f in originals} == originals, "the tree itself changed"
    assert not root.path.exists()


@pytest.mark.parametrize("bug", BUGS, ids=[b.name for b in BUGS])
def test_every_bug_has_canaries_that_say_reached_and_triggered_from_inside_a_function(
    bug: Bug,
) -> None:
    calls = "".join(c.new for c in bug.canaries)
    assert "zoo_canary.reached(" in calls and "zoo_canary.triggered(" in calls, bug.name
    imports = [
        line for c in bug.canaries for line in c.new.splitlines() if "import zoo_canary" in line
    ]
    # Imported inside the function that calls it (indented), never at a module's top.
    assert imports and all(line.startswith(" ") for line in imports), imports
    assert all(c.file.endswith(".py") for c in bug.canaries)


def test_a_bug_that_no_longer_applies_says_which_and_where(tmp_path: Path) -> None:
    bug = BUGS[0]
    stale = replace(bug, replacements=(Replacement(bug.replacements[0].file, "no such text", "x"),))
    (tmp_path / "broker_ref").mkdir()
    target = tmp_path / bug.replacements[0].file
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("something else\n")
    with pytest.raises(BugDoesNotApply) as raised:
        apply_bug(tmp_path, stale)
    assert str(raised.value) == (
        f"bug {bug.name} no longer applies: replacement 1's old text is not there in "
        f"{bug.replacements[0].file} (the code changed; update {bug.source.name})"
    )
    twice = replace(stale, replacements=(Replacement(stale.replacements[0].file, "e", "E"),))
    with pytest.raises(BugDoesNotApply, match="is there 3 times"):
        apply_bug(tmp_path, twice)
    gone = replace(stale, replacements=(Replacement("broker_ref/gone.py", "a", "b"),))
    with pytest.raises(BugDoesNotApply, match=r"broker_ref/gone.py is not in the tree"):
        apply_bug(tmp_path, gone)
    assert target.read_text() == "something else\n"  # nothing half-applied


GOOD = {
    "name": "x",
    "design": "active-passive",
    "breaks": "b",
    "claim": "c",
    "document": "d",
    "expect": ["lost"],
    "replace": [{"file": "broker_ref/a.py", "old": "a", "new": "b"}],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": 1}, "'colour': unknown field"),
        ({"name": "y"}, "'name' is 'y', but the file is named 'x'"),
        ({"design": "solo"}, "'design' must be one of replicated-group, active-passive"),
        ({"claim": ""}, "'claim' must be a non-empty text"),
        ({"expect": []}, "'expect' must list the violation kinds"),
        ({"cheap": "yes"}, "'cheap' must be true or false"),
        ({"replace": []}, "give at least one [[replace]] table"),
        ({"replace": [{"file": "../x.py", "old": "a", "new": "b"}]}, "must be a path inside"),
        ({"replace": [{"file": "a.py", "old": "a", "new": "a"}]}, "nothing would change"),
        ({"replace": [{"file": "a.py", "old": "a", "neu": "b"}]}, "replace 1.neu: unknown"),
    ],
)
def test_a_bad_bug_file_is_refused_naming_the_field(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError) as raised:
        parse_bug({**GOOD, **change}, Path("zoo/x.toml"))
    assert str(raised.value).startswith("zoo/x.toml") and message in str(raised.value)


def test_a_bug_file_without_its_incident_or_unreadable_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\n[[replace]\n')
    with pytest.raises(InputError, match=r"x.toml:2: not valid TOML"):
        load_bug(path)
    path.write_text(
        'name = "x"\ndesign = "active-passive"\nbreaks = "b"\nclaim = "c"\ndocument = "d"\n'
        'expect = ["lost"]\n[[replace]]\nfile = "a.py"\nold = "a"\nnew = "b"\n'
    )
    with pytest.raises(InputError, match=r"its incident .*incidents/x.toml is missing"):
        load_bug(path)
    (tmp_path / "incidents").mkdir()
    (tmp_path / "incidents" / "x.toml").write_text("")
    assert load_bug(path).incident == tmp_path / "incidents" / "x.toml"


def test_bugs_are_chosen_by_name_and_an_unknown_one_is_refused() -> None:
    names = (BUGS[2].name, BUGS[0].name)
    assert [b.name for b in bugs_named(BUGS, names)] == [BUGS[0].name, BUGS[2].name]
    assert bugs_named(BUGS, ()) == BUGS
    with pytest.raises(UsageError, match="no bug 'nope' in the zoo"):
        bugs_named(BUGS, ("nope",))


def test_a_scratch_root_is_removed_and_one_whose_owner_died_is_reaped(tmp_path: Path) -> None:
    with ScratchRoot(tmp_path) as root:
        assert root.path.name.startswith(f"{PREFIX}{os.getpid()}-")
        tree = root.tree("clean")
        assert (tree.path / "broker_ref" / "__main__.py").is_file()
        assert not list(tree.path.rglob("__pycache__"))
    assert not root.path.exists()

    # A benchmark killed with SIGKILL: its root stays until the next `lab` command.
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from lab.bench.scratch import ScratchRoot; "
            "r = ScratchRoot(sys.argv[1]); r.tree('clean'); print(r.path)",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    left = Path(child.stdout.strip())
    mine = ScratchRoot(tmp_path)
    foreign = tmp_path / f"{PREFIX}notmine"
    foreign.mkdir()
    assert left.is_dir()
    assert reap_scratch(tmp_path) == [left]
    assert not left.exists() and mine.path.is_dir() and foreign.is_dir()
    mine.close()

"""Docs that cannot drift: docs/architecture.md links every module of loader/codesift and
plpython/codesift_db (and nothing that is gone), the pipeline package's docstring lists
exactly its modules, and recorded bench results name no machine's paths."""

import re
from pathlib import Path

import codesift_db.pipeline

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = (ROOT / "loader" / "codesift", ROOT / "plpython" / "codesift_db")


def _modules(folder: Path) -> set[Path]:
    """Every Python module under folder but the package markers."""
    return {
        p.relative_to(ROOT)
        for p in folder.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py") and "__pycache__" not in p.parts
    }


def _linked(doc: Path) -> set[Path]:
    """The repository paths a markdown file links to (relative links only)."""
    links = re.findall(r"\]\(([^)#\s]+)\)", doc.read_text())
    return {
        (doc.parent / link).resolve().relative_to(ROOT)
        for link in links
        if "://" not in link and (doc.parent / link).resolve().is_relative_to(ROOT)
    }


def test_architecture_links_every_module():
    linked = _linked(ARCHITECTURE)
    modules = set().union(*(_modules(folder) for folder in PACKAGES))
    assert sorted(map(str, modules - linked)) == []


def test_architecture_links_nothing_that_is_gone():
    assert sorted(str(p) for p in _linked(ARCHITECTURE) if not (ROOT / p).exists()) == []


def test_pipeline_docstring_lists_its_modules():
    listed = set(re.findall(r"^\d+\.\s+(\w+)\.py\b", codesift_db.pipeline.__doc__ or "", re.M))
    folder = Path(codesift_db.pipeline.__file__).parent
    present = {p.stem for p in _modules(folder)}
    assert listed == present


def test_bench_results_name_no_machine_paths():
    """A recorded result says which checkout it ran on by name, not by this machine's path."""
    machine_path = re.compile(r"(?<![\w.<])/(?:work|tmp|home|root|Users)/\S+")
    found = [
        f"{p.name}:{n}: {m.group()}"
        for p in sorted((ROOT / "bench" / "results").iterdir())
        if p.is_file()
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        for m in machine_path.finditer(line)
    ]
    assert found == []

"""Content digests (``rlanything_core/digests.py``): what changes them and what does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlanything_core.digests import distribution_versions, file_digest, files_digest, imported_modules, source_digest


def _package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "rlanything_core"
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    return pkg


def test_the_code_digest_ignores_docstrings_comments_and_layout_but_not_code(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {"a.py": '"""Doc."""\nX = 1  # why\n\n\ndef f():\n    """Doc."""\n    return X\n'})
    before = source_digest(["a.py"], root=pkg)
    (pkg / "a.py").write_text('"""Another doc."""\n# a comment\nX = 1\ndef f():\n    return X\n')
    assert source_digest(["a.py"], root=pkg) == before
    (pkg / "a.py").write_text('"""Doc."""\nX = 2\ndef f():\n    return X\n')
    assert source_digest(["a.py"], root=pkg) != before
    with pytest.raises(ValueError, match="modules"):
        source_digest(["missing.py"], root=pkg)


def test_imported_modules_follow_the_package_imports_transitively(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "top.py": "import os\nfrom rlanything_core.sub.mid import g\n",
        "sub/__init__.py": "",
        "sub/mid.py": "def g():\n    from .low import h\n    return h\n",  # relative, inside a function
        "sub/low.py": "import rlanything_core.top\n",  # a cycle back: visited once
        "unused.py": "",
    })  # fmt: skip
    assert imported_modules("top.py", root=pkg) == ["sub/low.py", "sub/mid.py", "top.py"]
    with pytest.raises(ValueError, match="module"):
        imported_modules("nope.py", root=pkg)
    real = imported_modules("ablation/warm_start_encoder.py")
    assert "training/scorer_sft.py" in real and "envs/alfworld/expert.py" in real and "models/encoder.py" in real


def test_file_digests_read_contents_not_names(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_bytes(b"x")
    b.write_bytes(b"x")
    c.write_bytes(b"y")
    assert file_digest(a) == file_digest(b) != file_digest(c)
    assert files_digest([a, c]) == files_digest([b, c]) != files_digest([c, a])
    with pytest.raises(ValueError, match="path"):
        file_digest(tmp_path / "none")
    assert distribution_versions(["torch", "no-such-distribution-x"])["no-such-distribution-x"] == "absent"

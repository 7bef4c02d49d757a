"""models.py is what datamodel-code-generator makes from the committed clients/openapi.json (with the
options of pyproject.toml); test/e2e/clients-generated.test.ts checks that document against a server."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def test_models_are_regenerated_identically_from_the_committed_document(tmp_path: Path) -> None:
    codegen = Path(sys.executable).parent / "datamodel-codegen"
    assert codegen.exists() or shutil.which("datamodel-codegen"), "datamodel-code-generator is a test dependency"
    out = tmp_path / "models.py"
    subprocess.run([str(codegen), "--input", str(HERE.parent / "openapi.json"), "--output", str(out)], cwd=HERE, check=True, capture_output=True)
    committed = (HERE / "src" / "scores_client" / "models.py").read_text()
    assert out.read_text() == committed, "models.py is stale: run npm run clients:generate and commit"

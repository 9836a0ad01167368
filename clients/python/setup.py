"""Builds the wheel with the intent's Avro schema inside the package (the native Kafka mode needs
it). The schema has one copy, in the repository's schemas module; this hook copies it in at build
time rather than keeping a second copy that could drift."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SCHEMA = Path(__file__).resolve().parent.parent.parent / "schemas" / "src" / "main" / "avro" / "ToolIntent.avsc"


class BuildWithSchema(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "effectledger" / "schemas"
        if SCHEMA.is_file():
            target.mkdir(parents=True, exist_ok=True)
            (target / "ToolIntent.avsc").write_bytes(SCHEMA.read_bytes())
        elif not (target / "ToolIntent.avsc").is_file():
            raise SystemExit(f"{SCHEMA} is missing: build the package from a clone of the repository")


setup(cmdclass={"build_py": BuildWithSchema})

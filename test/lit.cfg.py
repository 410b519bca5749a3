"""lit configuration: `*.mlir` (IR) and `*.test` (tool) files under test/ are FileCheck tests."""

import os
import shutil
import sys

import lit.formats

config.name = "stc-mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs", "__pycache__"]

for tool in ("stc-opt", "stc-run", "filecheck"):
    if shutil.which(tool) is None:
        lit_config.fatal(f"'{tool}' is not on PATH: install the project with pip install -e '.[test]'")

# keep the environment the tools need (PYTHONPATH, HOME for caches)
for var in ("PYTHONPATH", "HOME", "STC_DEBUG"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%python", sys.executable))

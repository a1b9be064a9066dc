"""``python -m contracts`` regenerates the committed JSON Schemas."""

from contracts.registry import export_schemas

for path in export_schemas():
    print(path.name)

#!/usr/bin/env python3
"""Validate Prometheus Operator objects (monitoring.coreos.com/v1 PodMonitor, ServiceMonitor) strictly.

kubernetes-validate has schemas for Kubernetes' own kinds only, and fails on a custom resource. This checks the
custom resources against the OpenAPI schema of their CRD, vendored under .ci/schemas/ (one file per kind, named
GROUP_VERSION_KIND.yaml), as strictly as kubernetes-validate --strict checks the rest:

  - an object that names properties takes no other field (additionalProperties: false, unless the schema says
    x-kubernetes-preserve-unknown-fields); so a misspelt field fails instead of being pruned by the API server;
  - apiVersion and kind are the schema's, metadata is Kubernetes' ObjectMeta (from kubernetes-validate's own
    strict schemas for the Kubernetes version given) with a name;
  - a list marked x-kubernetes-list-type: set has no duplicates. (A `map` list's key uniqueness is not checked:
    the vendored schemas have such lists only under `status`, which they leave out.)

Usage:
  monitor-validate.py [--k8s 1.33.0] [--others OUT] FILE...
      validate every document of a group with a vendored schema (any monitoring.coreos.com kind must have one);
      with --others, write every other document to OUT, for kubernetes-validate. Exit 1 naming each problem.
  monitor-validate.py --vendor CRD.yaml RELEASE COMMIT
      write .ci/schemas/ from a CRD file of the prometheus-operator project (example/prometheus-operator-crd/).
"""
import argparse
import importlib.resources
import json
import pathlib
import sys

import jsonschema
import referencing
import yaml

SCHEMAS = pathlib.Path(__file__).resolve().parent / "schemas"
GROUPS = ("monitoring.coreos.com",)
OBJECT_META = "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def schema_file(api_version, kind):
    """Where the vendored schema of apiVersion/kind is (it may not exist)."""
    group, _, version = api_version.rpartition("/")
    return SCHEMAS / f"{group}_{version}_{kind.lower()}.yaml"


def strict(node):
    """The schema with unknown fields refused and sets made unique, recursively (a copy)."""
    if isinstance(node, list):
        return [strict(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: strict(sub) for name, sub in value.items()}
        elif key in ("enum", "default", "required", "x-kubernetes-list-map-keys"):
            out[key] = value
        else:
            out[key] = strict(value)
    if "properties" in out and "additionalProperties" not in out and \
            not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if out.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    return out


VALIDATORS = {}


def validator_for(api_version, kind, k8s):
    """A validator of one kind, or None when no schema is vendored for it."""
    if (api_version, kind) in VALIDATORS:
        return VALIDATORS[(api_version, kind)]
    path = schema_file(api_version, kind)
    if not path.exists():
        VALIDATORS[(api_version, kind)] = None
        return None
    schema = strict(yaml.safe_load(path.read_text()))
    schema["properties"].update({
        "apiVersion": {"const": api_version},
        "kind": {"const": kind},
        "metadata": {"allOf": [{"$ref": OBJECT_META}, {"required": ["name"]}]},
    })
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
    folder = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{k8s}-local-strict"
    defs = json.loads((folder / "_definitions.json").read_text())
    registry = referencing.Resource.from_contents(defs) @ referencing.Registry()
    v = jsonschema.Draft202012Validator(schema, registry=registry)
    VALIDATORS[(api_version, kind)] = v
    return v


def where(error):
    """The JSON path of an error, e.g. spec.endpoints[0].port."""
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the object)"


def validate(files, k8s, others):
    """Validate every custom resource of files; return (valid, problems)."""
    valid, problems, rest = [], [], []
    for path in files:
        try:
            docs = list(yaml.safe_load_all(open(path)))
        except (OSError, yaml.YAMLError) as e:
            problems.append(f"{path}: cannot read it as YAML: {e}")
            continue
        for i, doc in enumerate(docs, 1):
            if not isinstance(doc, dict):
                continue
            api_version, kind = str(doc.get("apiVersion", "")), str(doc.get("kind", ""))
            name = f"{kind} {(doc.get('metadata') or {}).get('name', '(no name)')}"
            v = validator_for(api_version, kind, k8s)
            if v is None:
                if api_version.rpartition("/")[0] in GROUPS:
                    problems.append(f"{path}: document {i} ({name}): no schema for {api_version} {kind} under "
                                    f"{SCHEMAS.relative_to(SCHEMAS.parent.parent)} (monitor-validate.py --vendor)")
                else:
                    rest.append(doc)
                continue
            errors = sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
            for e in errors:
                problems.append(f"{path}: document {i} ({name}): {where(e)}: {e.message}")
            if not errors:
                valid.append(f"{path}: {api_version} {name}")
    if others:
        with open(others, "w") as f:
            yaml.safe_dump_all(rest, f, sort_keys=False)
    return valid, problems


def vendor(crd_path, release, commit):
    """Write the schema of each version of a CRD file into SCHEMAS, descriptions and status left out."""

    def bare(node):
        if isinstance(node, list):
            return [bare(x) for x in node]
        if not isinstance(node, dict):
            return node
        return {k: ({n: bare(s) for n, s in v.items()} if k == "properties" else
                    v if k in ("enum", "default", "required", "x-kubernetes-list-map-keys") else bare(v))
                for k, v in node.items() if k != "description"}

    crd = yaml.safe_load(open(crd_path))
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    for version in crd["spec"]["versions"]:
        schema = dict(version["schema"]["openAPIV3Schema"])
        schema["properties"] = {k: v for k, v in schema["properties"].items() if k != "status"}
        out = schema_file(f"{group}/{version['name']}", kind)
        with open(out, "w") as f:
            f.write(f"# The OpenAPI schema of the Prometheus Operator's {kind} ({group}/{version['name']}), for\n"
                    f"# .ci/monitor-validate.py (run by .ci/k8s-validate.sh; kubernetes-validate knows Kubernetes' own\n"
                    f"# kinds only). Vendored from prometheus-operator {release} (commit {commit}), file\n"
                    f"#   {crd_path}\n"
                    f"# spec.versions[{version['name']}].schema.openAPIV3Schema, every `description` and the `status`\n"
                    f"# property (never written in a manifest) left out, by\n"
                    f"#   python3 .ci/monitor-validate.py --vendor THAT-FILE {release} {commit}\n")
            yaml.safe_dump(bare(schema), f, sort_keys=False, width=120)
        print(f"wrote {out.relative_to(SCHEMAS.parent.parent)}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--k8s", default="1.33.0", help="the Kubernetes version whose ObjectMeta schema applies")
    p.add_argument("--others", help="write the documents of other kinds here")
    p.add_argument("--vendor", action="store_true", help="FILES are CRD.yaml RELEASE COMMIT: vendor its schema")
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    if args.vendor:
        if len(args.files) != 3:
            p.error("--vendor takes CRD.yaml RELEASE COMMIT")
        vendor(*args.files)
        return 0
    valid, problems = validate(args.files, args.k8s, args.others)
    for line in valid:
        print(f"valid {line}")
    for line in problems:
        print(f"ERROR {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

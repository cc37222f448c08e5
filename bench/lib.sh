# What the benchmark scripts share (sourced): the binary, the project's Python package on the
# path, MPI as root, and a copy of a config that runs from another folder.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/build/release/runner/compatbench
PY=/usr/bin/python3
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

# copy_config CONFIG DIR: CONFIG and the YAML files beside it (its manifests) into DIR, with
# the project's python folder named outright (configs/real*.yaml reach it from
# {config_dir}); prints the copy's path. Everything else in the config is unchanged.
copy_config() {
  mkdir -p "$2"
  cp "$(dirname "$(realpath "$1")")"/*.yaml "$2/"
  sed -i "s|{config_dir}/../python|$ROOT/python|g" "$2/$(basename "$1")"
  echo "$2/$(basename "$1")"
}

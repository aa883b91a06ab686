# -*- Python -*-
# lit configuration of the PerfDojo regression tests.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "PERFDOJO"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".pd", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.perfdojo_obj_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs",
                   "check_reference.py"]

llvm_config.use_default_substitutions()

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%perfdojo_lib", config.perfdojo_lib_dir))
config.substitutions.append(("%kernels",
                             os.path.join(config.perfdojo_src_root, "kernels")))
config.substitutions.append(("%python", config.perfdojo_python))
config.substitutions.append(("%cc", config.perfdojo_cc))
config.substitutions.append(("%openmp_dir", config.perfdojo_openmp_dir))
config.substitutions.append(("%perfdojo_obj", config.perfdojo_obj_root))
config.substitutions.append(("%perfdojo_src", config.perfdojo_src_root))
# The RL agent's libtorch module (lib/Search/Policy/Torch), when built.
if os.path.exists(os.path.join(config.perfdojo_lib_dir,
                               "PerfDojoTorchPolicy" + config.llvm_shlib_ext)):
    config.available_features.add("torch-policy")

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])

# The sanitizer build (scripts/sanitize.sh, -DPERFDOJO_SANITIZE=...): the
# features `asan` and `ubsan`, and the user's sanitizer options, which the
# instrumented tools read after their own (tools/SanitizerDefaults.cpp).
sanitizers = [s for s in config.perfdojo_sanitize.split(",") if s]
if "address" in sanitizers:
    config.available_features.add("asan")
# Factor for the time limits that catch hangs (%timeout_scale): the tools
# run up to about 5 times slower under ASan (importing 20000 buffers: 0.3 s,
# 1.8 s instrumented).
config.substitutions.append(("%timeout_scale",
                             "5" if "address" in sanitizers else "1"))
if "undefined" in sanitizers:
    config.available_features.add("ubsan")
# -DPERFDOJO_ENABLE_FUZZERS=ON: the libFuzzer targets of tools/fuzzers.
if config.perfdojo_enable_fuzzers:
    config.available_features.add("fuzzers")
llvm_config.with_system_environment(["ASAN_OPTIONS", "UBSAN_OPTIONS",
                                     "LSAN_OPTIONS"])
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.perfdojo_tools_dir,
                             append_path=True)

# Debian's mlir-opt, which loads the plugin. An instrumented plugin needs
# the ASan runtime loaded first, with the options the tools set for
# themselves (tools/SanitizerDefaults.cpp).
mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
if config.perfdojo_asan_runtime:
    mlir_opt = "env LD_PRELOAD=%s ASAN_OPTIONS=allow_user_poisoning=0 %s" % (
        config.perfdojo_asan_runtime, mlir_opt)

# MLIR's JIT runner and the support libraries of printMemrefF32 and
# memref.copy, which run whole host programs (test/Integration).
mlir_runner = os.path.join(config.llvm_tools_dir, "mlir-runner")
config.substitutions.append((
    "%mlir_runner_utils",
    os.path.join(config.llvm_lib_dir, "libmlir_runner_utils" + config.llvm_shlib_ext)))
config.substitutions.append((
    "%mlir_c_runner_utils",
    os.path.join(config.llvm_lib_dir,
                 "libmlir_c_runner_utils" + config.llvm_shlib_ext)))

# The %-prefixed substitutions come first: otherwise the bare tool names
# would be substituted inside them.
tools = [
    ToolSubst("%pd-opt", command=os.path.join(config.perfdojo_tools_dir, "pd-opt")),
    ToolSubst("%pd-translate",
              command=os.path.join(config.perfdojo_tools_dir, "pd-translate")),
    ToolSubst("%pd-run", command=os.path.join(config.perfdojo_tools_dir, "pd-run")),
    ToolSubst("%pd-gpu-run",
              command=os.path.join(config.perfdojo_tools_dir, "pd-gpu-run")),
    ToolSubst("%mlir-opt", command=mlir_opt),
    ToolSubst("%mlir-runner", command=mlir_runner),
    "pd-opt",
    "pd-translate",
    "pd-run",
    "pd-gpu-run",
]
llvm_config.add_tool_substitutions(tools, [config.perfdojo_tools_dir])


def find_ptxas():
    """NVIDIA's PTX assembler, which checks the hand-written PTX of the GPU
    runner's tests: on PATH, in the CUDA toolkit's usual place, or from the
    nvidia-cuda-nvcc wheel of /usr/bin/python3; None without one."""
    for path in (config.environment.get("PATH"), os.environ.get("PATH")):
        found = shutil.which("ptxas", path=path) if path else None
        if found:
            return found
    if os.access("/usr/local/cuda/bin/ptxas", os.X_OK):
        return "/usr/local/cuda/bin/ptxas"
    try:
        where = subprocess.run(
            ["/usr/bin/python3", "-c",
             "import os, nvidia.cuda_nvcc as m; "
             "print(os.path.join(list(m.__path__)[0], 'bin', 'ptxas'))"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            universal_newlines=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    found = where.stdout.strip()
    if where.returncode == 0 and os.access(found, os.X_OK):
        return found
    return None


ptxas = find_ptxas()
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# `cuda-device`: the GPU runner sees a CUDA GPU (tests that need one say
# REQUIRES: cuda-device; those of the driverless machine say UNSUPPORTED).
# Any failure (no runner yet, no driver, a hang) means no device.
try:
    runner_env = dict(os.environ)
    runner_env.pop("PD_GPU_RUN_CUDA_LIBRARY", None)
    if subprocess.run(
            [os.path.join(config.perfdojo_tools_dir, "pd-gpu-run"),
             "--list-devices", "--api=cuda"],
            cwd=config.perfdojo_tools_dir, env=runner_env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=20).returncode == 0:
        config.available_features.add("cuda-device")
except (OSError, subprocess.SubprocessError):
    pass

# `avx512f`: this CPU runs AVX-512 (the JIT then computes exp with
# vscalefps, whose subnormal results test/Conversion/exp-scalef.test checks).
try:
    with open("/proc/cpuinfo") as cpuinfo:
        if " avx512f" in cpuinfo.read():
            config.available_features.add("avx512f")
except OSError:
    pass

"""Builds the springskin Python package (a wheel: `pip wheel --no-build-isolation .`).

The extension module springskin._core is built by the project's CMake build
(target springskin_core of pyext/CMakeLists.txt, which links the static
core), not by setuptools' compiler: this build_ext configures and builds
that target in its own build directory and copies the module into the
wheel next to the pure-Python files of pyext/springskin.

Needs Debian's python3-dev, python3-numpy, python3-setuptools,
python3-wheel, python3-pip and the core's build dependencies
(.ci/deps.sh). The module links the system's shared libraries (Assimp,
EGL, GLEW, json-c, ...): the wheel is for machines with those packages, not
a manylinux wheel. numpy is needed at run time (python3-numpy); it is not
declared as a requirement so that `pip wheel` does not try to fetch it.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
# setuptools' default build directory "build" is the CMake build of `make`.
BUILD_BASE = "build-wheel"


def core_version():
    with open(os.path.join(ROOT, "core", "include", "springskin.h"), encoding="utf-8") as f:
        match = re.search(r'#define SSK_VERSION_STRING "([^"]+)"', f.read())
    if not match:
        raise RuntimeError("SSK_VERSION_STRING not found in core/include/springskin.h")
    return match.group(1)


class CMakeExtension(Extension):
    """An extension built by CMake (no sources for setuptools to compile)."""

    def __init__(self, name, target):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    """Configures the project with CMake (Release, no tests or benchmarks,
    this interpreter) and builds the extension's target."""

    def build_extension(self, ext):
        build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call([
            "cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
            "-DSSK_BUILD_TESTS=OFF", "-DSSK_BUILD_BENCH=OFF", "-DSSK_BUILD_PYTHON=ON",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", ext.target,
                               "-j", jobs])
        name = ext.name.split(".")[-1]
        built = glob.glob(os.path.join(build_dir, "python", "springskin", name + ".*so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one built {name} module in {build_dir}, found "
                               f"{built}")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


os.makedirs(os.path.join(ROOT, BUILD_BASE), exist_ok=True)

setup(
    name="springskin",
    version=core_version(),
    description="SpringSkin character skinning: LBS, DQS, attachment and spring "
                "deformers on numpy arrays",
    long_description=open(os.path.join(ROOT, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    package_dir={"": "pyext"},
    packages=["springskin"],
    ext_modules=[CMakeExtension("springskin._core", target="springskin_core")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    zip_safe=False,
)

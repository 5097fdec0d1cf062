# Cross build for aarch64 Linux with Debian's gcc-aarch64-linux-gnu, the
# arm64 multiarch PCRE2 / utf8proc / cJSON (libpcre2-dev:arm64, libutf8proc-dev:arm64,
# libcjson-dev:arm64) and
# tests run under qemu-user (scripts/install-deps.sh installs all of them):
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# ctest then runs each test as `qemu-aarch64 -cpu max <test>` (NPL_QEMU_CPU picks
# another CPU model, e.g. cortex-a72: NEON only). The programs run on the arm64
# multiarch libc6 (/lib/ld-linux-aarch64.so.1, /lib/aarch64-linux-gnu, pulled in by
# libpcre2-dev:arm64), not with `-L /usr/aarch64-linux-gnu`: that mixes the cross
# package's ld.so with the multiarch libc.so.6 PCRE2 needs, and pthread_create hangs.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# pkg-config reads the arm64 .pc files only (multiarch: /usr/lib/aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
set(NPL_QEMU_CPU "max" CACHE STRING "qemu-aarch64 -cpu model the tests run on")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-cpu;${NPL_QEMU_CPU})

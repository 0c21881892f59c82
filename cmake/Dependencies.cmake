# Finds what ncclwatch builds against, and stops with a one-line reason when
# something is missing.
#
#   CUDA Toolkit : cuda.h, cuda_runtime_api.h (headers only; nothing links the
#                  real runtime except the real-NCCL tests). Looked for under
#                  CUDAToolkit_ROOT, $CUDA_HOME, then /usr/local/cuda.
#   NCCL         : nccl.h and libnccl.so.2. Looked for under NCCL_ROOT,
#                  $NCCL_HOME, then the CUDA Toolkit (NVIDIA's CUDA 13 images
#                  ship NCCL inside it), then the system.
#   protobuf, abseil, RE2, Catch2, Google Benchmark: Debian packages. RE2
#                  matches the decoder's patterns on untrusted text in linear
#                  time, without the recursion of std::regex.

set(CUDAToolkit_ROOT "${CUDAToolkit_ROOT}" CACHE PATH "Root of the CUDA Toolkit (default /usr/local/cuda)")
set(NCCL_ROOT "${NCCL_ROOT}" CACHE PATH "Root of the NCCL install (default: inside the CUDA Toolkit)")

set(_cuda_hints ${CUDAToolkit_ROOT} $ENV{CUDAToolkit_ROOT} $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda)
find_path(NCCLWATCH_CUDA_INCLUDE_DIR cuda.h
  HINTS ${_cuda_hints} PATH_SUFFIXES include targets/x86_64-linux/include NO_DEFAULT_PATH)
find_path(NCCLWATCH_CUDA_INCLUDE_DIR cuda.h)
if(NOT NCCLWATCH_CUDA_INCLUDE_DIR OR NOT EXISTS "${NCCLWATCH_CUDA_INCLUDE_DIR}/cuda_runtime_api.h")
  message(FATAL_ERROR
    "CUDA Toolkit not found: no cuda.h and cuda_runtime_api.h under CUDAToolkit_ROOT "
    "('${CUDAToolkit_ROOT}'), $CUDA_HOME or /usr/local/cuda. Install the CUDA Toolkit or pass "
    "-DCUDAToolkit_ROOT=/path/to/cuda.")
endif()
get_filename_component(NCCLWATCH_CUDA_ROOT "${NCCLWATCH_CUDA_INCLUDE_DIR}/.." ABSOLUTE)

set(_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${NCCLWATCH_CUDA_ROOT})
find_path(NCCLWATCH_NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_path(NCCLWATCH_NCCL_INCLUDE_DIR nccl.h)
find_library(NCCLWATCH_NCCL_LIBRARY NAMES libnccl.so.2 nccl
  HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu NO_DEFAULT_PATH)
find_library(NCCLWATCH_NCCL_LIBRARY NAMES libnccl.so.2 nccl)
find_library(NCCLWATCH_CUDART_LIBRARY NAMES libcudart.so.13 cudart
  HINTS ${NCCLWATCH_CUDA_ROOT} PATH_SUFFIXES lib lib64 targets/x86_64-linux/lib NO_DEFAULT_PATH)
if(NOT NCCLWATCH_CUDART_LIBRARY)
  message(FATAL_ERROR "CUDA runtime not found: no libcudart.so.13 under ${NCCLWATCH_CUDA_ROOT}. "
                      "Install the CUDA Toolkit or pass -DCUDAToolkit_ROOT=/path/to/cuda.")
endif()
if(NOT NCCLWATCH_NCCL_INCLUDE_DIR OR NOT NCCLWATCH_NCCL_LIBRARY)
  message(FATAL_ERROR
    "NCCL not found: need nccl.h and libnccl.so.2 under NCCL_ROOT ('${NCCL_ROOT}'), $NCCL_HOME, "
    "the CUDA Toolkit ('${NCCLWATCH_CUDA_ROOT}') or the system. Install NCCL or pass "
    "-DNCCL_ROOT=/path/to/nccl.")
endif()

# NCCL_VERSION_CODE of the nccl.h in `dir`, into `out` (0 when unreadable).
function(_ncclwatch_nccl_header_version dir out)
  set(code 0)
  if(EXISTS "${dir}/nccl.h")
    file(STRINGS "${dir}/nccl.h" line REGEX "^#define NCCL_VERSION_CODE")
    string(REGEX REPLACE ".*NCCL_VERSION_CODE +([0-9]+).*" "\\1" code "${line}")
    if(NOT code MATCHES "^[0-9]+$")
      set(code 0)
    endif()
  endif()
  set(${out} ${code} PARENT_SCOPE)
endfunction()
_ncclwatch_nccl_header_version("${NCCLWATCH_NCCL_INCLUDE_DIR}" NCCLWATCH_NCCL_HEADER_VERSION)

# The build uses the newest NCCL it can see: the install found above, or a
# release scripts/fetch-nccl.sh cached ($NCCLWATCH_CACHE, default
# ~/.cache/ncclwatch: nccl/VERSION/include/nccl.h beside its libnccl.so.2),
# headers and library as a pair. The shim then wraps every entry point of that
# nccl.h and still runs with NCCL 2.18 and later (an entry point the loaded
# NCCL lacks stays absent: shim/interpose/nccl_exports.h), the simulator
# implements that release, and the test programs call it.
# scripts/build.sh and scripts/test.sh fetch the newest release first; with
# no network the install's nccl.h is used, and what is newer is not built
# (the tests that need it report themselves skipped, with the reason).
# -DNCCLWATCH_NCCL_FETCHED=OFF: the install only.
option(NCCLWATCH_NCCL_FETCHED "Build against the newest NCCL release scripts/fetch-nccl.sh cached, when newer than the install" ON)
set(NCCLWATCH_NCCL_INSTALL_INCLUDE_DIR "${NCCLWATCH_NCCL_INCLUDE_DIR}")
set(NCCLWATCH_NCCL_SOURCE "install")
if(NCCLWATCH_NCCL_FETCHED)
  if(DEFINED ENV{NCCLWATCH_CACHE} AND NOT "$ENV{NCCLWATCH_CACHE}" STREQUAL "")
    set(_nccl_cache "$ENV{NCCLWATCH_CACHE}/nccl")
  else()
    set(_nccl_cache "$ENV{HOME}/.cache/ncclwatch/nccl")
  endif()
  # A release fetched later makes the build configure again.
  if(IS_DIRECTORY "${_nccl_cache}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_nccl_cache}")
  endif()
  file(GLOB _fetched_headers "${_nccl_cache}/*/include/nccl.h")
  foreach(h IN LISTS _fetched_headers)
    get_filename_component(dir "${h}" DIRECTORY)
    get_filename_component(release "${dir}/.." ABSOLUTE)
    _ncclwatch_nccl_header_version("${dir}" code)
    if(code GREATER NCCLWATCH_NCCL_HEADER_VERSION AND EXISTS "${release}/libnccl.so.2")
      set(NCCLWATCH_NCCL_HEADER_VERSION ${code})
      set(NCCLWATCH_NCCL_INCLUDE_DIR "${dir}")
      set(NCCLWATCH_NCCL_LIBRARY "${release}/libnccl.so.2")
      set(NCCLWATCH_NCCL_SOURCE "fetched by scripts/fetch-nccl.sh")
    endif()
  endforeach()
endif()
file(STRINGS "${NCCLWATCH_CUDA_INCLUDE_DIR}/cuda.h" _cuda_code REGEX "^#define CUDA_VERSION ")
string(REGEX REPLACE ".*CUDA_VERSION +([0-9]+).*" "\\1" NCCLWATCH_CUDA_HEADER_VERSION "${_cuda_code}")
if(NCCLWATCH_NCCL_HEADER_VERSION LESS 22800)
  message(FATAL_ERROR "nccl.h at ${NCCLWATCH_NCCL_INCLUDE_DIR} is version ${NCCLWATCH_NCCL_HEADER_VERSION}; "
                      "ncclwatch is built against NCCL 2.28 or later.")
endif()
if(NCCLWATCH_CUDA_HEADER_VERSION LESS 13000)
  message(FATAL_ERROR "cuda.h at ${NCCLWATCH_CUDA_INCLUDE_DIR} is CUDA ${NCCLWATCH_CUDA_HEADER_VERSION}; "
                      "the simulator implements the CUDA 13 runtime (libcudart.so.13).")
endif()
message(STATUS "CUDA headers: ${NCCLWATCH_CUDA_INCLUDE_DIR} (CUDA_VERSION ${NCCLWATCH_CUDA_HEADER_VERSION})")
message(STATUS "NCCL: ${NCCLWATCH_NCCL_INCLUDE_DIR} (NCCL_VERSION_CODE ${NCCLWATCH_NCCL_HEADER_VERSION}, ${NCCLWATCH_NCCL_SOURCE}), ${NCCLWATCH_NCCL_LIBRARY}")

# The real headers, as SYSTEM includes so that their own warnings stay theirs.
add_library(ncclwatch_cuda_headers INTERFACE)
target_include_directories(ncclwatch_cuda_headers SYSTEM INTERFACE
  ${NCCLWATCH_NCCL_INCLUDE_DIR} ${NCCLWATCH_CUDA_INCLUDE_DIR})
# nccl.h 2.30 and later declare ncclResetDebugInit only where NCCL_OS_LINUX is
# defined (NCCL's own Linux build), and make it an empty macro elsewhere: the
# shim and the simulator are NCCL's Linux ABI.
target_compile_definitions(ncclwatch_cuda_headers INTERFACE NCCL_OS_LINUX
  NCCLWATCH_NCCL_HEADER_VERSION=${NCCLWATCH_NCCL_HEADER_VERSION})

find_package(Threads REQUIRED)

find_package(Protobuf)
if(NOT Protobuf_FOUND OR NOT Protobuf_PROTOC_EXECUTABLE)
  message(FATAL_ERROR "protobuf not found: install the Debian packages libprotobuf-dev and protobuf-compiler.")
endif()

find_package(absl CONFIG)
if(NOT absl_FOUND)
  message(FATAL_ERROR "abseil not found: install the Debian package libabsl-dev.")
endif()

# Debian's RE2 ships a pkg-config file but no CMake package.
find_path(NCCLWATCH_RE2_INCLUDE_DIR re2/re2.h)
find_library(NCCLWATCH_RE2_LIBRARY re2)
if(NOT NCCLWATCH_RE2_INCLUDE_DIR OR NOT NCCLWATCH_RE2_LIBRARY)
  message(FATAL_ERROR "RE2 not found: install the Debian package libre2-dev.")
endif()
add_library(ncclwatch_re2 INTERFACE)
target_include_directories(ncclwatch_re2 SYSTEM INTERFACE ${NCCLWATCH_RE2_INCLUDE_DIR})
target_link_libraries(ncclwatch_re2 INTERFACE ${NCCLWATCH_RE2_LIBRARY} Threads::Threads)

# abseil, protobuf and RE2 from their static archives (Debian's are built
# with -fPIC): `ncclwatch` is then one file that runs wherever its libc
# does, to copy into a container as it is, and starts in a third of the
# time (the dynamic loader's work for 30 shared C++ libraries was 2 ms of
# every run: a tenth of diagnosing a 64-rank job). The test programs link
# them the same way. All of them or none, never a mix (a static abseil
# beside a shared library that brings its own would be two abseils): none
# where an archive is missing, or where protobuf (22 and later) or RE2
# (2023 and later) are built on abseil themselves, whose archives would then
# have to follow theirs on the link line. NCCLWATCH_STATIC_DEPS_USED says
# which it was.
option(NCCLWATCH_STATIC_DEPS "Link abseil, protobuf and RE2 into the programs from their static archives" ON)
set(NCCLWATCH_STATIC_DEPS_USED OFF)
# The archive beside a shared library (libfoo.so[.N...] -> libfoo.a), or "".
function(_ncclwatch_archive_of shared out)
  string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" ".a" archive "${shared}")
  if(NOT archive STREQUAL shared AND EXISTS "${archive}")
    set(${out} "${archive}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()
# The location properties of an imported library target (one a
# configuration it names), or none for a target with no file (headers only).
function(_ncclwatch_location_properties target out)
  set(props "")
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "UNKNOWN_LIBRARY")
    get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
    set(candidates IMPORTED_LOCATION)
    if(configs)
      foreach(c IN LISTS configs)
        string(TOUPPER "${c}" c)
        list(APPEND candidates IMPORTED_LOCATION_${c})
      endforeach()
    endif()
    foreach(prop IN LISTS candidates)
      get_target_property(location ${target} ${prop})
      if(location)
        list(APPEND props ${prop})
      endif()
    endforeach()
  endif()
  set(${out} "${props}" PARENT_SCOPE)
endfunction()
if(NCCLWATCH_STATIC_DEPS)
  set(_static_possible ON)
  set(_why "")
  if(Protobuf_VERSION VERSION_GREATER_EQUAL 22)
    set(_static_possible OFF)
    set(_why "protobuf ${Protobuf_VERSION} is built on abseil")
  endif()
  file(STRINGS "${NCCLWATCH_RE2_INCLUDE_DIR}/re2/re2.h" _re2_absl REGEX "#include \"absl/")
  if(_re2_absl)
    set(_static_possible OFF)
    set(_why "RE2 is built on abseil")
  endif()
  # Every location's archive first: switched only when all are there.
  set(_switches "")
  get_property(_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
  foreach(t IN LISTS _imported)
    if(t MATCHES "^absl::" OR t STREQUAL "protobuf::libprotobuf")
      _ncclwatch_location_properties(${t} _props)
      foreach(prop IN LISTS _props)
        get_target_property(location ${t} ${prop})
        _ncclwatch_archive_of("${location}" archive)
        if(NOT archive)
          set(_static_possible OFF)
          set(_why "no archive beside ${location}")
        endif()
        list(APPEND _switches "${t}|${prop}|${archive}")
      endforeach()
    endif()
  endforeach()
  _ncclwatch_archive_of("${NCCLWATCH_RE2_LIBRARY}" _re2_archive)
  if(NOT _re2_archive)
    set(_static_possible OFF)
    set(_why "no archive beside ${NCCLWATCH_RE2_LIBRARY}")
  endif()
  find_package(ZLIB)
  if(NOT ZLIB_FOUND)
    set(_static_possible OFF)
    set(_why "zlib (protobuf's archive needs it) not found")
  endif()
  if(_static_possible)
    foreach(entry IN LISTS _switches)
      string(REPLACE "|" ";" entry "${entry}")
      list(GET entry 0 t)
      list(GET entry 1 prop)
      list(GET entry 2 archive)
      set_target_properties(${t} PROPERTIES ${prop} "${archive}")
    endforeach()
    # What the shared libraries brought along.
    set_property(TARGET protobuf::libprotobuf APPEND PROPERTY INTERFACE_LINK_LIBRARIES ZLIB::ZLIB Threads::Threads)
    set_property(TARGET ncclwatch_re2 PROPERTY INTERFACE_LINK_LIBRARIES "${_re2_archive}" Threads::Threads)
    set(NCCLWATCH_STATIC_DEPS_USED ON)
    message(STATUS "abseil, protobuf and RE2: linked from their static archives")
  else()
    message(STATUS "abseil, protobuf and RE2: shared libraries (${_why})")
  endif()
endif()

if(NCCLWATCH_BUILD_TESTS)
  find_package(Catch2 2 CONFIG)
  if(NOT Catch2_FOUND)
    message(FATAL_ERROR "Catch2 not found: install the Debian package catch2.")
  endif()
  include(Catch)
endif()

if(NCCLWATCH_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG)
  if(NOT benchmark_FOUND)
    message(STATUS "Google Benchmark not found (Debian libbenchmark-dev): benchmarks are not built.")
    set(NCCLWATCH_BUILD_BENCHMARKS OFF)
  endif()
endif()

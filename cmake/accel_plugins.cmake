# Accelerator plugins. Each implementation of the accelerator ABI
# (include/npullm_accel.h) is built twice from one archive:
#   libnpl_accel_<name>.so      the plugin: exports only npl_accel_get_api
#                               (src/accel/plugin.map); libnpullm links none,
#                               the loader (src/plugin) dlopens it when a
#                               compile --target or a package names it
#   npl_accel_<name>_static     the implementation as a static archive, for
#                               white-box tests and for a static build that
#                               registers it as a built-in provider
#                               (npl_plugin_rt_params.providers)
# NAME is the target name of npullm compile --target and of packages: the
# loader (src/plugin) maps target "qnn-htp" to libnpl_accel_qnn-htp.so.
# The libraries go next to the npullm executable and libnpullm.so (where the
# loader looks by default) and, for the test executables, into tests/.
# npl_accel_plugin(NAME PROVIDER DEPS SOURCES...): DEPS (a ;-list) is what the
# implementation is built on: vnpu on the leaf kernel library alone.
set(NPL_ACCEL_PLUGINS "")

function(npl_accel_plugin name provider deps)
  add_library(npl_accel_${name}_static STATIC ${ARGN})
  target_include_directories(npl_accel_${name}_static PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  set_target_properties(npl_accel_${name}_static PROPERTIES C_VISIBILITY_PRESET hidden)

  add_library(npl_accel_${name} SHARED ${CMAKE_SOURCE_DIR}/src/accel/plugin_entry.c)
  target_include_directories(npl_accel_${name} PRIVATE ${CMAKE_SOURCE_DIR}/include)
  target_compile_definitions(npl_accel_${name} PRIVATE NPL_ACCEL_PROVIDER=${provider})
  target_link_libraries(npl_accel_${name} PRIVATE npl_accel_${name}_static ${deps})
  target_link_options(npl_accel_${name} PRIVATE "LINKER:--version-script=${CMAKE_SOURCE_DIR}/src/accel/plugin.map")
  if(NOT NPL_SANITIZE) # clang's sanitizer runtimes are not linked into shared libraries
    target_link_options(npl_accel_${name} PRIVATE "LINKER:--no-undefined")
  endif()
  set_target_properties(npl_accel_${name} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR} LINK_DEPENDS ${CMAKE_SOURCE_DIR}/src/accel/plugin.map)
  add_custom_command(TARGET npl_accel_${name} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/tests
    COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_FILE:npl_accel_${name}> ${CMAKE_BINARY_DIR}/tests/)
  set(NPL_ACCEL_PLUGINS ${NPL_ACCEL_PLUGINS} npl_accel_${name} PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE NPL_VNPU_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/accel/vnpu/*.c)
file(GLOB NPL_RECORD_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/accel/record/*.c)
list(FILTER NPL_VNPU_SOURCES EXCLUDE REGEX "${NPL_OTHER_ARCH_RE}") # vnpu's x86 families on x86 only
if(NPL_EXCLUDE_REGEX)
  list(FILTER NPL_VNPU_SOURCES EXCLUDE REGEX "${NPL_EXCLUDE_REGEX}")
  list(FILTER NPL_RECORD_SOURCES EXCLUDE REGEX "${NPL_EXCLUDE_REGEX}")
endif()
# vnpu: the kernels and npl_quote (its messages quote tensor names)
add_library(npl_accel_quote OBJECT ${CMAKE_SOURCE_DIR}/src/core/quote.c)
target_include_directories(npl_accel_quote PRIVATE ${CMAKE_SOURCE_DIR}/src)
set_target_properties(npl_accel_quote PROPERTIES C_VISIBILITY_PRESET hidden)
npl_accel_plugin(vnpu npl_vnpu_get_api "npullm_kernels;npl_accel_quote" ${NPL_VNPU_SOURCES})
# record writes GGUF: the engine's format layer (only the members it uses are linked)
npl_accel_plugin(record npl_record_get_api npullm_static ${NPL_RECORD_SOURCES})

# qnn-htp: Qualcomm QNN HTP (src/accel/qnn). It dlopens QNN's own libraries
# (from NPL_QNN_LIB_DIR, see CMakeLists.txt, or the backend option qnn_lib)
# in backend_create, so loading the plugin needs no QNN; m: Rope angles.
file(GLOB NPL_QNN_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/accel/qnn/*.c)
npl_accel_plugin(qnn-htp npl_qnn_get_api "${CMAKE_DL_LIBS};m" ${NPL_QNN_SOURCES})
target_compile_definitions(npl_accel_qnn-htp_static PRIVATE NPL_QNN_DEFAULT_LIB_DIR="${NPL_QNN_LIB_DIR}")

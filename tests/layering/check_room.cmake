# One room's floor (tests/layering/CMakeLists.txt): with the include path the
# room is compiled with (FLAGS_FILE), the headers in ALLOWED compile and each
# header in FORBIDDEN is not found. Probe sources are written under PROBE_DIR
# (in the build tree); the compiler only checks syntax and writes nothing.

file(STRINGS ${FLAGS_FILE} flags)
list(FILTER flags EXCLUDE REGEX "^-I$")
list(REMOVE_DUPLICATES flags)
# The compiler's own directories (/usr/include) stay last, as in the build.
foreach(dir IN LISTS IMPLICIT)
  list(REMOVE_ITEM flags "-I${dir}")
endforeach()
if(NOT flags)
  message(FATAL_ERROR "no include path in ${FLAGS_FILE}")
endif()
file(MAKE_DIRECTORY ${PROBE_DIR})

function(compile name text result output)
  file(WRITE ${PROBE_DIR}/${name}.cc "${text}")
  execute_process(COMMAND ${COMPILER} -std=c++17 -fsyntax-only ${flags} ${PROBE_DIR}/${name}.cc
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result} ${rc} PARENT_SCOPE)
  set(${output} "${out}${err}" PARENT_SCOPE)
endfunction()

# The room's own headers and those below it compile with that path: the
# failures below are the floors, not a broken command line.
set(text "")
foreach(h IN LISTS ALLOWED)
  string(APPEND text "#include \"${h}\"\n")
endforeach()
compile(allowed "${text}int main() { return 0; }\n" rc out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the headers this room may include do not compile:\n${out}")
endif()
message(STATUS "compiles: ${ALLOWED}")

set(failures "")
foreach(h IN LISTS FORBIDDEN)
  if(NOT EXISTS ${SOURCE_DIR}/${h})
    message(FATAL_ERROR "${SOURCE_DIR}/${h} does not exist: the test names a header that is not there")
  endif()
  string(MAKE_C_IDENTIFIER ${h} name)
  compile(${name} "#include \"${h}\"\n" rc out)
  string(REGEX MATCH "${h}: No such file or directory|'${h}' file not found" missing "${out}")
  if(rc EQUAL 0 OR NOT missing)
    list(APPEND failures ${h})
    message(STATUS "REACHABLE (it must not be): ${h}\n${out}")
  else()
    message(STATUS "refused, as it must be: #include \"${h}\"")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "this room can include headers of rooms above it: ${failures}")
endif()

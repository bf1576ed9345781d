# Helpers shared by the generators of spec/ (gen-registers.cmake, gen-isa.cmake): include()d, not run. The including
# script sets GEN_TOOL (its name in messages), SRC_NAME (the json's path in messages) and J (the json text).

# Stops with a message naming the generator and the json.
function(fail msg)
  message(FATAL_ERROR "${GEN_TOOL}: ${SRC_NAME}: ${msg}")
endfunction()

# out = the json value at the given path (fail() if missing).
macro(jget out)
  string(JSON ${out} ERROR_VARIABLE _jerr GET "${J}" ${ARGN})
  if(_jerr)
    fail("missing ${ARGN}: ${_jerr}")
  endif()
endmacro()


# Writes `content` to `path` only when it differs, so that dependents do not rebuild for nothing.
function(write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()

# Helpers shared by the generators of spec/ (gen-registers.cmake, gen-isa.cmake): include()d, not run.

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

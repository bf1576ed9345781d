# Builds one hierarchically verilated model and packs it for trn_rtl (rtl/CMakeLists.txt runs this at build time):
#
#   cmake -DVERILATOR=<verilator> -DARGS=<args file> -DMDIR=<output dir> -DPREFIX=<model prefix> -DLINKER=<ld>
#         -P rtl/verilate_hier.cmake
#
# 1. `verilator -f ARGS` (--cc --hierarchical --build): verilates each hierarchy block and the top, and compiles them
#    with Verilator's makefiles into MDIR/PREFIX__ALL.a (the top's objects) and one lib<block>.a per hierarchy block.
# 2. `ld -r` joins the top's objects and every block library into MDIR/PREFIX__model.o. Verilator's runtime
#    (verilated.o, ...) is not in there: trn_rtl compiles it once for every model.
cmake_minimum_required(VERSION 3.25)
foreach(v VERILATOR ARGS MDIR PREFIX LINKER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "verilate_hier.cmake: -D${v}=... missing")
  endif()
endforeach()

# Verilator runs make; a jobserver inherited from an outer make (e.g. `make test-long`) does not reach through Ninja.
unset(ENV{MAKEFLAGS})
unset(ENV{MFLAGS})
unset(ENV{MAKELEVEL})

execute_process(COMMAND ${VERILATOR} -f ${ARGS} COMMAND_ERROR_IS_FATAL ANY)

# The top's objects: the classes PREFIX_classes.mk lists (not VM_GLOBAL_*, Verilator's runtime). PREFIX__ALL.a is
# not used: Verilator 5.006 also archives the block libraries into it, as members a linker cannot use.
file(READ ${MDIR}/${PREFIX}_classes.mk classes_mk)
set(objects)
foreach(kind VM_CLASSES_FAST VM_CLASSES_SLOW VM_SUPPORT_FAST VM_SUPPORT_SLOW)
  string(REGEX MATCH "${kind} \\+=[^\n]*\n([^\n]+\n)*" block "${classes_mk}")
  string(REGEX REPLACE "^${kind} \\+=" "" block "${block}")
  string(REGEX MATCHALL "[A-Za-z0-9_]+" names "${block}")
  foreach(n IN LISTS names)
    list(APPEND objects ${MDIR}/${n}.o)
  endforeach()
endforeach()

file(READ ${MDIR}/${PREFIX}_hier.mk hier_mk)
string(REGEX MATCH "VM_HIER_LIBS :=[^\n]*\n([^\n]+\n)*" libs_block "${hier_mk}")
string(REGEX MATCHALL "[^ \t\n\\\\]+\\.a" libs "${libs_block}")
set(libraries)
foreach(l IN LISTS libs)
  list(APPEND libraries ${MDIR}/${l})
endforeach()
if(NOT objects OR NOT libraries)
  message(FATAL_ERROR "verilate_hier.cmake: no objects (${objects}) or block libraries (${libraries}) in ${MDIR}")
endif()

execute_process(
  COMMAND ${LINKER} -r -o ${MDIR}/${PREFIX}__model.o.tmp ${objects} --whole-archive ${libraries} --no-whole-archive
  COMMAND_ERROR_IS_FATAL ANY)
file(RENAME ${MDIR}/${PREFIX}__model.o.tmp ${MDIR}/${PREFIX}__model.o)

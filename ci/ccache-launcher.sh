#!/bin/sh
# The compiler launcher of ci/build.sh's build trees: ccache, with the settings that let it cache a
# translation unit that includes a precompiled header, and the header's own compilation (the ccache
# manual, "Precompiled headers"): without `pch_defines,time_macros` ccache counts each of them as
# "could not use precompiled header" and runs the compiler uncached. `include_file_mtime` and
# `include_file_ctime`: the .gch is written just before the units that include it, which ccache
# would otherwise take for an include file too new to trust. No source of lockstep uses __DATE__ or
# __TIME__ (time_macros). CCACHE_BASEDIR comes from the environment of the build, as set there.
CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
export CCACHE_SLOPPINESS
exec ccache "$@"

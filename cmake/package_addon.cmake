# package_addon.cmake — stages the Blender addon and zips it.
#
# Run in script mode by the build (addon/CMakeLists.txt):
#   cmake -DSSK_ADDON_SOURCE=<addon/springskin_blender>
#         -DSSK_PYTHON_PACKAGE=<build/python/springskin>
#         -DSSK_ADDON_STAGE=<build/addon> -DSSK_ADDON_ZIP=<build/springskin_blender.zip>
#         -P package_addon.cmake
# Result: <stage>/springskin_blender/ = the addon's .py files plus the
# compiled springskin package as the subpackage springskin_blender/springskin/
# (the native module and its Python layer; imported by native.py), and the
# zip of that folder, the file Blender's "Install Add-on" takes. Caches
# (__pycache__, *.pyc) are left out. The zip is written under a temporary
# name and renamed, so an interrupted build never leaves a truncated zip.

foreach(var SSK_ADDON_SOURCE SSK_PYTHON_PACKAGE SSK_ADDON_STAGE SSK_ADDON_ZIP)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "package_addon.cmake: ${var} is not set")
  endif()
endforeach()

set(stage_dir "${SSK_ADDON_STAGE}/springskin_blender")
file(REMOVE_RECURSE "${stage_dir}")
file(MAKE_DIRECTORY "${stage_dir}/springskin")

file(GLOB addon_files "${SSK_ADDON_SOURCE}/*.py")
if(NOT addon_files)
  message(FATAL_ERROR "package_addon.cmake: no .py files in ${SSK_ADDON_SOURCE}")
endif()
file(COPY ${addon_files} DESTINATION "${stage_dir}")

file(GLOB package_files "${SSK_PYTHON_PACKAGE}/*.py" "${SSK_PYTHON_PACKAGE}/*.so")
if(NOT package_files)
  message(FATAL_ERROR "package_addon.cmake: the springskin package is not built in "
                      "${SSK_PYTHON_PACKAGE}")
endif()
file(COPY ${package_files} DESTINATION "${stage_dir}/springskin")

set(tmp_zip "${SSK_ADDON_ZIP}.tmp")
file(REMOVE "${tmp_zip}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E tar cf "${tmp_zip}" --format=zip springskin_blender
  WORKING_DIRECTORY "${SSK_ADDON_STAGE}"
  RESULT_VARIABLE zip_result)
if(NOT zip_result EQUAL 0)
  file(REMOVE "${tmp_zip}")
  message(FATAL_ERROR "package_addon.cmake: zipping ${stage_dir} failed (${zip_result})")
endif()
file(RENAME "${tmp_zip}" "${SSK_ADDON_ZIP}")

# mqd_unity_files(TARGET): compile TARGET's C++ sources of the source tree as unity files of
# up to 8 sources each, as CMake's UNITY_BUILD does (MQD_UNITY_BUILD, CMakeLists.txt, says
# why), but each file names its sources relative to the source tree (#include
# "common/Endpoint.cc", found through -iquote <source tree>). The same sources then make the
# same unity file in any clone, which a compiler cache (MQD_COMPILER_CACHE) finds again; CMake
# 3.25's own unity files name them by absolute path, different in every clone. Sources outside
# the source tree (generated ones) are compiled on their own.
function(mqd_unity_files target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(members "")
  set(includes "")
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    file(RELATIVE_PATH relative "${PROJECT_SOURCE_DIR}" "${path}")
    if(path MATCHES "\\.cc$" AND NOT relative MATCHES "^\\.\\./")
      list(APPEND members "${path}")
      list(APPEND includes "${relative}")
    endif()
  endforeach()
  list(LENGTH includes count)
  if(count EQUAL 0)
    return()
  endif()
  set(unity_files "")
  math(EXPR last "${count} - 1")
  foreach(first RANGE 0 ${last} 8)
    list(SUBLIST includes ${first} 8 batch)
    set(content "/* made by mqd_unity_files (cmake/UnityFiles.cmake) */\n")
    foreach(relative IN LISTS batch)
      string(APPEND content "#include \"${relative}\"\n")
    endforeach()
    math(EXPR index "${first} / 8")
    set(file "${binary_dir}/CMakeFiles/${target}.dir/unity/unity_${index}.cc")
    file(CONFIGURE OUTPUT "${file}" CONTENT "${content}")  # rewritten only when it changes
    list(APPEND unity_files "${file}")
  endforeach()
  set_source_files_properties(${members} TARGET_DIRECTORY ${target}
                              PROPERTIES HEADER_FILE_ONLY ON)
  target_sources(${target} PRIVATE ${unity_files})
  target_compile_options(${target} PRIVATE -iquote "${PROJECT_SOURCE_DIR}")
endfunction()

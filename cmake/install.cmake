# `cmake --install build --prefix P` installs
#   bin/unitrain                     the command: blocks the signals a run saves on, then
#                                    executes libexec/unitrain/unitrain
#   libexec/unitrain/unitrain        the command's program; finds its library through RPATH
#   lib/libunitrain.so.<version>     and its SONAME and development links
#   lib/libunitrain_sentencepiece.so SentencePiece's module (the text dataset, tokenizer train)
#   include/unitrain/...             every header under src/unitrain, folders kept
#   lib/cmake/unitrain/              find_package(unitrain CONFIG) -> unitrain::unitrain
#   lib/pkgconfig/unitrain.pc        pkg-config --cflags --libs unitrain
# Nothing inside names P: the tree can be moved. (lib is lib/<multiarch> when configured with
# CMAKE_INSTALL_PREFIX=/usr; GNUInstallDirs decides.)
include(CMakePackageConfigHelpers)

set(UNITRAIN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/unitrain)

install(TARGETS unitrain EXPORT unitrainTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS unitrain_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS unitrain_program RUNTIME DESTINATION ${UNITRAIN_PROGRAM_DIR})
# SentencePiece's module, which libunitrain opens from its own folder.
install(TARGETS unitrain_sentencepiece LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# A pattern, not a list: headers added, moved or renamed (dist/ -> parallel/) need no edit here.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/unitrain DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

# Bash completion, generated from the command's own declarations when the command is built.
add_custom_command(TARGET unitrain_cli POST_BUILD
                   COMMAND sh -c "$<TARGET_FILE:unitrain_cli> completion bash > ${PROJECT_BINARY_DIR}/unitrain.bash-completion"
                   COMMENT "bash completion for unitrain" VERBATIM)
install(FILES ${PROJECT_BINARY_DIR}/unitrain.bash-completion
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME unitrain)

# The CMake package.
install(EXPORT unitrainTargets NAMESPACE unitrain:: DESTINATION ${UNITRAIN_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/unitrainConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/unitrainConfig.cmake
                              INSTALL_DESTINATION ${UNITRAIN_CMAKE_DIR})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/unitrainConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/unitrainConfig.cmake
              ${PROJECT_BINARY_DIR}/unitrainConfigVersion.cmake
        DESTINATION ${UNITRAIN_CMAKE_DIR})

# The pkg-config file. fmt and yaml-cpp have .pc files of their own (Requires:); LibTorch has none,
# so its include directories, definitions and libraries are written out from its CMake targets.
set(torch_cflags "")
foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
  list(APPEND torch_cflags "-I${dir}")  # pkg-config drops the system ones
endforeach()
get_target_property(torch_definitions torch_cpu INTERFACE_COMPILE_DEFINITIONS)
list(TRANSFORM torch_definitions PREPEND "-D")
list(APPEND torch_cflags ${torch_definitions} ${TORCH_CXX_FLAGS})
set(torch_link_dirs "")
set(torch_libs "")
foreach(lib IN ITEMS torch torch_cpu c10)
  get_target_property(location ${lib} LOCATION)
  get_filename_component(dir ${location} DIRECTORY)
  get_filename_component(name ${location} NAME_WE)
  string(REGEX REPLACE "^lib" "-l" name ${name})
  list(APPEND torch_link_dirs "-L${dir}" "-Wl,-rpath,${dir}")
  list(APPEND torch_libs ${name})
endforeach()
list(REMOVE_DUPLICATES torch_link_dirs)
list(JOIN torch_cflags " " UNITRAIN_PC_TORCH_CFLAGS)
list(JOIN torch_link_dirs " " dirs)
list(JOIN torch_libs " " libs)
set(UNITRAIN_PC_TORCH_LIBS "${dirs} ${libs}")
file(RELATIVE_PATH UNITRAIN_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" UNITRAIN_PC_TO_PREFIX ${UNITRAIN_PC_TO_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/cmake/unitrain.pc.in ${PROJECT_BINARY_DIR}/unitrain.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/unitrain.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

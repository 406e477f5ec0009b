# `cmake --install build --prefix P` puts:
#   P/bin/kvsim
#   P/lib/libkvsim.a, P/lib/libkvsim.so (-> .so.MAJOR -> .so.VERSION)
#   P/include/kvsim.h (umbrella), P/include/kvsim/*.h
#   P/lib/pkgconfig/kvsim.pc
include(GNUInstallDirs)

install(TARGETS kvsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kvsim_lib kvsim_shared
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${KVSIM_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kvsim)
install(FILES ${KVSIM_UMBRELLA_H} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# kvsim.pc: libcsv ships no .pc file, so it goes in Libs.private by hand
# (with its folder when that is not one the linker looks in anyway).
get_filename_component(csv_dir ${CSV_LIBRARY} DIRECTORY)
set(KVSIM_PC_LIBS_PRIVATE "-lcsv -lm")
list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES ${csv_dir} csv_implicit)
if(csv_implicit EQUAL -1)
  set(KVSIM_PC_LIBS_PRIVATE "-L${csv_dir} ${KVSIM_PC_LIBS_PRIVATE}")
endif()
# The prefix, relative to the pkgconfig folder.
file(RELATIVE_PATH KVSIM_PC_UP /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" KVSIM_PC_UP "${KVSIM_PC_UP}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/kvsim.pc.in ${CMAKE_BINARY_DIR}/generated/kvsim.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/generated/kvsim.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The installed tree, used from outside: tests/install/test_install.sh
# installs into a temporary prefix and builds tests/install/consumer.c
# against it with pkg-config, linked shared and static.
if(KVSIM_SANITIZE)
  set(KVSIM_CONSUMER_FLAGS "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined")
else()
  set(KVSIM_CONSUMER_FLAGS "")
endif()
add_test(NAME install/test_install
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install/test_install.sh $<TARGET_FILE:kvsim>
                 ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${CMAKE_C_COMPILER} "${KVSIM_CONSUMER_FLAGS}")
set_tests_properties(install/test_install PROPERTIES SKIP_RETURN_CODE 77 LABELS "slow;install")

# The Python module (python/) over the installed library: test_python.sh
# installs both into temporary folders and runs python/tests with pytest.
add_test(NAME install/test_python
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install/test_python.sh $<TARGET_FILE:kvsim>
                 ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(install/test_python PROPERTIES SKIP_RETURN_CODE 77 LABELS "slow;install")

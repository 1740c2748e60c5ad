# Build and test variants shared by every part.
#
# bsg_add_executable(NAME SOURCES... LIBS ...) builds NAME and, with BSG_SANITIZERS, NAME-asan.
# bsg_add_test(NAME TARGET [ARGS ...] [ENV ...]) registers NAME running TARGET, plus
#   asan/NAME running TARGET-asan (with BSG_HELPER pointing at the asan helper) and
#   valgrind/NAME running TARGET under memcheck (with BSG_HELPER_WRAPPER set so that the test also
#   runs the helper it spawns under memcheck). NO_VALGRIND leaves the valgrind variant out (the
#   umockdev suite: hundreds of helper runs per test under memcheck, most of the suite's time on
#   two cores, over code the unit, badinput and host suites take through memcheck; ASan runs it
#   whole). Exit 77 means skipped.

set(BSG_ASAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
find_program(VALGRIND_EXECUTABLE valgrind)
set(BSG_VALGRIND_CMD ${VALGRIND_EXECUTABLE} --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite --track-fds=no --quiet)
string(REPLACE ";" " " BSG_VALGRIND_CMD_STRING "${BSG_VALGRIND_CMD}")

function(bsg_add_executable name)
    cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;INCLUDES" ${ARGN})
    add_executable(${name} ${ARG_SOURCES})
    target_link_libraries(${name} PRIVATE ${ARG_LIBS})
    target_include_directories(${name} PRIVATE ${ARG_INCLUDES})
    if(BSG_SANITIZERS)
        set(asan_libs)
        foreach(lib IN LISTS ARG_LIBS)
            if(TARGET ${lib}-asan)
                list(APPEND asan_libs ${lib}-asan)
            else()
                list(APPEND asan_libs ${lib})
            endif()
        endforeach()
        add_executable(${name}-asan ${ARG_SOURCES})
        target_link_libraries(${name}-asan PRIVATE ${asan_libs})
        target_include_directories(${name}-asan PRIVATE ${ARG_INCLUDES})
        target_compile_options(${name}-asan PRIVATE ${BSG_ASAN_FLAGS})
        # The umockdev preload must come first in the link map, so the ASan runtime is linked
        # statically: gcc needs -static-libasan for that, clang does it by default (and rejects
        # -static-libasan).
        target_link_options(${name}-asan PRIVATE ${BSG_ASAN_FLAGS}
            $<$<C_COMPILER_ID:GNU>:-static-libasan>)
    endif()
endfunction()

function(bsg_add_library name)
    cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;INCLUDES" ${ARGN})
    add_library(${name} STATIC ${ARG_SOURCES})
    target_link_libraries(${name} PUBLIC ${ARG_LIBS})
    target_include_directories(${name} PUBLIC ${ARG_INCLUDES})
    if(BSG_SANITIZERS)
        add_library(${name}-asan STATIC ${ARG_SOURCES})
        target_link_libraries(${name}-asan PUBLIC ${ARG_LIBS})
        target_include_directories(${name}-asan PUBLIC ${ARG_INCLUDES})
        target_compile_options(${name}-asan PRIVATE ${BSG_ASAN_FLAGS})
    endif()
endfunction()

function(bsg_add_test name target)
    cmake_parse_arguments(ARG "NO_VALGRIND" "TIMEOUT" "ARGS;ENV;LABELS" ${ARGN})
    if(NOT ARG_TIMEOUT)
        set(ARG_TIMEOUT 120)
    endif()
    set(helper $<TARGET_FILE:btrfs-scan-gate-test>)
    add_test(NAME ${name} COMMAND ${target} ${ARG_ARGS})
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${ARG_TIMEOUT}
        LABELS "${ARG_LABELS}" ENVIRONMENT "BSG_HELPER=${helper};${ARG_ENV}")
    if(BSG_SANITIZERS)
        # ASan+UBSan runs 2-3x slower, more on a loaded machine
        math(EXPR asan_timeout "${ARG_TIMEOUT} * 3")
        add_test(NAME asan/${name} COMMAND ${target}-asan ${ARG_ARGS})
        set_tests_properties(asan/${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${asan_timeout}
            LABELS "asan;${ARG_LABELS}"
            ENVIRONMENT "BSG_HELPER=$<TARGET_FILE:btrfs-scan-gate-test-asan>;ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1:abort_on_error=0;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1;${ARG_ENV}")
    endif()
    if(BSG_VALGRIND AND VALGRIND_EXECUTABLE AND NOT ARG_NO_VALGRIND)
        math(EXPR vg_timeout "${ARG_TIMEOUT} * 6")
        add_test(NAME valgrind/${name} COMMAND ${BSG_VALGRIND_CMD} $<TARGET_FILE:${target}> ${ARG_ARGS})
        set_tests_properties(valgrind/${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${vg_timeout}
            LABELS "valgrind;${ARG_LABELS}"
            ENVIRONMENT "BSG_HELPER=${helper};BSG_HELPER_WRAPPER=${BSG_VALGRIND_CMD_STRING};${ARG_ENV}")
    endif()
endfunction()

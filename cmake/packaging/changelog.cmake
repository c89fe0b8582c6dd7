# SPDX-License-Identifier: MIT
# Run at install time (install(CODE) in cmake/OdlPackaging.cmake): writes
# share/doc/<package>/changelog.gz, a one-entry Debian changelog for this
# build's version (version + source id, cmake/OdlBuildInfo.cmake).
# In: ODL_PKG, ODL_VERSION, ODL_ID_FILE, ODL_DOCDIR (relative to the
# prefix), ODL_MAINTAINER ("Name <address>").
file(STRINGS "${ODL_ID_FILE}" _id LIMIT_COUNT 1)
if(NOT _id)
  set(_id unknown)
endif()
set(_dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${ODL_DOCDIR}/${ODL_PKG}")
# SOURCE_DATE_EPOCH, when set, makes the date (and so the file) reproducible.
string(TIMESTAMP _date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(MAKE_DIRECTORY "${_dir}")
file(WRITE "${_dir}/changelog"
  "${ODL_PKG} (${ODL_VERSION}+${_id}) unstable; urgency=medium\n\n"
  "  * Built by CPack from OdinLink source ${_id}.\n\n"
  " -- ${ODL_MAINTAINER}  ${_date}\n")
file(REMOVE "${_dir}/changelog.gz")
execute_process(COMMAND gzip -9n "${_dir}/changelog" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "gzip -9n ${_dir}/changelog failed")
endif()
message(STATUS "Installing: ${_dir}/changelog.gz")

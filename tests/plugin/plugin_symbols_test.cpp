// SPDX-License-Identifier: MIT
// Reads the dynamic symbol table of both built plugin files (ELF64, as NCCL's
// own check greps `nm -D`): exactly ncclNetPlugin_v8 ... _v12 are defined.
#include <elf.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

/// Defined global/weak symbols of the .dynsym section of @path.
std::set<std::string> defined_dynamic_symbols(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> img((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::set<std::string> out;
    if (img.size() < sizeof(Elf64_Ehdr)) return out;
    const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(img.data());
    if (std::string(reinterpret_cast<const char*>(eh->e_ident), 4) != ELFMAG || eh->e_ident[EI_CLASS] != ELFCLASS64)
        return out;
    if (eh->e_shoff + size_t(eh->e_shnum) * sizeof(Elf64_Shdr) > img.size()) return out;
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(img.data() + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; ++i) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
        const Elf64_Shdr& strs = sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > img.size() || strs.sh_offset + strs.sh_size > img.size()) return out;
        const auto* syms = reinterpret_cast<const Elf64_Sym*>(img.data() + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
            const int bind = ELF64_ST_BIND(syms[k].st_info);
            if (syms[k].st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) continue;
            if (syms[k].st_name >= strs.sh_size) continue;
            out.insert(img.data() + strs.sh_offset + syms[k].st_name);
        }
    }
    return out;
}

const std::set<std::string> kExpected = {"ncclNetPlugin_v8", "ncclNetPlugin_v9", "ncclNetPlugin_v10",
                                         "ncclNetPlugin_v11", "ncclNetPlugin_v12"};

TEST(PluginSymbols, NcclFileExportsOnlyTheTables) { EXPECT_EQ(defined_dynamic_symbols(ODL_NCCL_PLUGIN), kExpected); }
TEST(PluginSymbols, RcclFileExportsOnlyTheTables) { EXPECT_EQ(defined_dynamic_symbols(ODL_RCCL_PLUGIN), kExpected); }
TEST(PluginSymbols, ReaderSeesLibodlExports) {
    // The reader itself must be able to fail: libodl exports odl_*, not these.
    const auto syms = defined_dynamic_symbols(ODL_LIBODL);
    EXPECT_TRUE(syms.count("odl_open"));
    EXPECT_FALSE(syms.count("ncclNetPlugin_v11"));
}

}  // namespace

/* bcryptprimitives.dll for Wine 8.0 (Debian 12), which lacks it: Rust's
 * standard library on Windows (1.78 and later) imports its ProcessPrng for
 * random bytes, so without this no Rust program starts under that Wine.
 * ProcessPrng is answered with RtlGenRandom (advapi32's SystemFunction036),
 * which Wine implements. Installed into the test prefix only, never shipped
 * (scripts/wine-test.sh; docs/decisions.md). */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}

/* dop853_coef.h - the coefficients of DOP853 (Dormand and Prince's 8(5,3) pair, Hairer, Norsett &
 * Wanner, Solving ODEs I, Sec. II.10, and their dop853.f), as exact hexadecimal doubles: A (12 x 12,
 * lower triangle), B (12) for the 8th-order solution, E5 (13) and E3 (13) for the 5th and 3rd order
 * error estimates (the 13th stage is f at the new point). Used by integrate.c only. */
#ifndef MBS_DOP853_COEF_H
#define MBS_DOP853_COEF_H
static const double DOP_A[12][12] = {
    {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0x1.aee6838dae63ap-5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0x1.432ce2aa42cacp-6, 0x1.e4c353ff64302p-5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0x1.e4c353ff64302p-6, 0.0, 0x1.6b927eff8b241p-4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0x1.ee50d7ecde9fap-3, 0.0, -0x1.c4e3ab5ad1507p-1, 0x1.d983d7ac79ef5p-1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0x1.2f684bda12f68p-5, 0.0, 0.0, 0x1.5ddb63bdb6d36p-3, 0x1.00f533f66f19ap-3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0x1.3000000000000p-5, 0.0, 0.0, 0x1.5cad30f3347edp-3, 0x1.ed4b3c332e04dp-5, -0x1.2000000000000p-6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0x1.2fdb8fee78792p-5, 0.0, 0.0, 0x1.5cf23f6595d72p-3, 0x1.b758640dea698p-4, -0x1.f5fcc20fcd32fp-7, 0x1.0f1d92efb0b71p-7, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0x1.3f8b78b985813p-1, 0.0, 0.0, -0x1.ae31bacc6bc8ap+1, -0x1.bc873f08e11f9p-1, 0x1.b9793d88d1855p+4, 0x1.42770f892ad69p+4, -0x1.5beb4865c42f9p+5, 0.0, 0.0, 0.0, 0.0},
    {0x1.e9205e321b655p-2, 0.0, 0.0, -0x1.3e7a8a34bd27fp+1, -0x1.2e3a9968c93c8p-1, 0x1.53ae4a6d655eep+4, 0x1.e8ef7b5f258b8p+3, -0x1.0a4e418d711b9p+5, -0x1.4d1b3d9b4a876p-6, 0.0, 0.0, 0.0},
    {-0x1.dfd121f1d399bp-1, 0.0, 0.0, 0x1.4bed869fb0b9dp+2, 0x1.1768702792ea9p+0, -0x1.04cb0e2110c1cp+3, -0x1.2852305e975a8p+4, 0x1.6bd4f06cb863ap+4, 0x1.3f2e777cf109dp+1, -0x1.85fc60d2b572cp+1, 0.0, 0.0},
    {0x1.22fbd3b09fcdcp+1, 0.0, 0.0, -0x1.511a963cafe55p+3, -0x1.001c935ac72acp+1, -0x1.1f57c8eff3006p+4, 0x1.bf2ea18b58a01p+4, -0x1.6df3a7d1cec13p+1, -0x1.1bee71a9f33a9p+3, 0x1.8b89c42c81861p+3, 0x1.496ac6253e202p-1, 0.0},
};
static const double DOP_B[12] = {0x1.bcc6368d1177cp-5, 0.0, 0.0, 0.0, 0.0, 0x1.1cd1ed2ad5ae2p+2, 0x1.e43a845d5ab9fp+0, -0x1.7346ecf96af43p+2, 0x1.3ea1df2f0eb98p-2, -0x1.37a028f43b002p-3, 0x1.9c657697fe72dp-3, 0x1.6e44f50ab6bc2p-5};
static const double DOP_E5[13] = {0x1.adeaea1607e1ap-7, 0.0, 0.0, 0.0, 0.0, -0x1.39a3da55ab5c3p+0, -0x1.fba83bede8a72p-2, 0x1.aa149f7eda509p+0, -0x1.66bc9b10e7e71p-2, 0x1.56330d0783989p-2, 0x1.4f8eb54a31435p-4, -0x1.6e44f50ab6bc2p-6, 0.0};
static const double DOP_E3[13] = {-0x1.84b641fbfa1f1p-3, 0.0, 0.0, 0.0, 0.0, 0x1.1cd1ed2ad5ae2p+2, 0x1.e43a845d5ab9fp+0, -0x1.7346ecf96af43p+2, -0x1.b0d3a26abb716p-2, -0x1.37a028f43b002p-3, 0x1.9c657697fe72dp-3, 0x1.732080ac040edp-6, 0.0};
#endif

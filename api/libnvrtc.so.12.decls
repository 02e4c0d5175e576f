# Facts of libnvrtc.so.12, extracted by api/gen_api.py --refresh-library-facts
# from nvrtc.h (cuda12); do not edit.
# Cross-checked with the .dynsym of NVIDIA's libnvrtc.so.12: names
# the headers declare but the library does not export are left out, names it
# exports that no header declares (internal ones) are not exported.
# Exported, not declared: 2 names, e.g. nvrtcGetNVVM nvrtcGetNVVMSize
nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char* const name_expression);
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char* const* options);
nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name, int numHeaders, const char* const* headers, const char* const* includeNames);
nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog);
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin);
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* cubinSizeRet);
const char* nvrtcGetErrorString(nvrtcResult result);
nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char* LTOIR);
nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog, size_t* LTOIRSizeRet);
nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char* const name_expression, const char** lowered_name);
nvrtcResult nvrtcGetNumSupportedArchs(int* numArchs);
nvrtcResult nvrtcGetOptiXIR(nvrtcProgram prog, char* optixir);
nvrtcResult nvrtcGetOptiXIRSize(nvrtcProgram prog, size_t* optixirSizeRet);
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx);
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* ptxSizeRet);
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log);
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* logSizeRet);
nvrtcResult nvrtcGetSupportedArchs(int* supportedArchs);
nvrtcResult nvrtcVersion(int* major, int* minor);
enum nvrtcResult NVRTC_SUCCESS=0 NVRTC_ERROR_OUT_OF_MEMORY=1 NVRTC_ERROR_PROGRAM_CREATION_FAILURE=2 NVRTC_ERROR_INVALID_INPUT=3 NVRTC_ERROR_INVALID_PROGRAM=4 NVRTC_ERROR_INVALID_OPTION=5 NVRTC_ERROR_COMPILATION=6 NVRTC_ERROR_BUILTIN_OPERATION_FAILURE=7 NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION=8 NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION=9 NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID=10 NVRTC_ERROR_INTERNAL_ERROR=11 NVRTC_ERROR_TIME_FILE_WRITE_FAILED=12

# Facts of libcufft.so.11, extracted by api/gen_api.py --refresh-library-facts
# from cufft.h, cufftXt.h (cuda12); do not edit.
# Cross-checked with the .dynsym of NVIDIA's libcufft.so: names
# the headers declare but the library does not export are left out, names it
# exports that no header declares (internal ones) are not exported.
# Exported, not declared: 2 names, e.g. cufftDebug cufftXtMakePlanGuru64
cufftResult cufftCreate(cufftHandle* handle);
cufftResult cufftDestroy(cufftHandle plan);
cufftResult cufftEstimate1d(int nx, cufftType type, int batch, size_t* workSize);
cufftResult cufftEstimate2d(int nx, int ny, cufftType type, size_t* workSize);
cufftResult cufftEstimate3d(int nx, int ny, int nz, cufftType type, size_t* workSize);
cufftResult cufftEstimateMany(int rank, int* n, int* inembed, int istride, int idist, int* onembed, int ostride, int odist, cufftType type, int batch, size_t* workSize);
cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata, int direction);
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata);
cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal* idata, cufftDoubleComplex* odata);
cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata);
cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleReal* odata);
cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleComplex* odata, int direction);
cufftResult cufftGetPlanPropertyInt64(cufftHandle plan, cufftProperty property, long long int* returnPtrValue);
cufftResult cufftGetProperty(libraryPropertyType type, int* value);
cufftResult cufftGetSize(cufftHandle handle, size_t* workSize);
cufftResult cufftGetSize1d(cufftHandle handle, int nx, cufftType type, int batch, size_t* workSize);
cufftResult cufftGetSize2d(cufftHandle handle, int nx, int ny, cufftType type, size_t* workSize);
cufftResult cufftGetSize3d(cufftHandle handle, int nx, int ny, int nz, cufftType type, size_t* workSize);
cufftResult cufftGetSizeMany(cufftHandle handle, int rank, int* n, int* inembed, int istride, int idist, int* onembed, int ostride, int odist, cufftType type, int batch, size_t* workArea);
cufftResult cufftGetSizeMany64(cufftHandle plan, int rank, long long int* n, long long int* inembed, long long int istride, long long int idist, long long int* onembed, long long int ostride, long long int odist, cufftType type, long long int batch, size_t* workSize);
cufftResult cufftGetVersion(int* version);
cufftResult cufftMakePlan1d(cufftHandle plan, int nx, cufftType type, int batch, size_t* workSize);
cufftResult cufftMakePlan2d(cufftHandle plan, int nx, int ny, cufftType type, size_t* workSize);
cufftResult cufftMakePlan3d(cufftHandle plan, int nx, int ny, int nz, cufftType type, size_t* workSize);
cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int* n, int* inembed, int istride, int idist, int* onembed, int ostride, int odist, cufftType type, int batch, size_t* workSize);
cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int* n, long long int* inembed, long long int istride, long long int idist, long long int* onembed, long long int ostride, long long int odist, cufftType type, long long int batch, size_t* workSize);
cufftResult cufftPlan1d(cufftHandle* plan, int nx, cufftType type, int batch);
cufftResult cufftPlan2d(cufftHandle* plan, int nx, int ny, cufftType type);
cufftResult cufftPlan3d(cufftHandle* plan, int nx, int ny, int nz, cufftType type);
cufftResult cufftPlanMany(cufftHandle* plan, int rank, int* n, int* inembed, int istride, int idist, int* onembed, int ostride, int odist, cufftType type, int batch);
cufftResult cufftResetPlanProperty(cufftHandle plan, cufftProperty property);
cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate);
cufftResult cufftSetPlanPropertyInt64(cufftHandle plan, cufftProperty property, const long long int inputValueInt);
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream);
cufftResult cufftSetWorkArea(cufftHandle plan, void* workArea);
cufftResult cufftXtClearCallback(cufftHandle plan, cufftXtCallbackType cbType);
cufftResult cufftXtExec(cufftHandle plan, void* input, void* output, int direction);
cufftResult cufftXtExecDescriptor(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output, int direction);
cufftResult cufftXtExecDescriptorC2C(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output, int direction);
cufftResult cufftXtExecDescriptorC2R(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output);
cufftResult cufftXtExecDescriptorD2Z(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output);
cufftResult cufftXtExecDescriptorR2C(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output);
cufftResult cufftXtExecDescriptorZ2D(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output);
cufftResult cufftXtExecDescriptorZ2Z(cufftHandle plan, cudaLibXtDesc* input, cudaLibXtDesc* output, int direction);
cufftResult cufftXtFree(cudaLibXtDesc* descriptor);
cufftResult cufftXtGetSizeMany(cufftHandle plan, int rank, long long int* n, long long int* inembed, long long int istride, long long int idist, cudaDataType inputtype, long long int* onembed, long long int ostride, long long int odist, cudaDataType outputtype, long long int batch, size_t* workSize, cudaDataType executiontype);
cufftResult cufftXtMakePlanMany(cufftHandle plan, int rank, long long int* n, long long int* inembed, long long int istride, long long int idist, cudaDataType inputtype, long long int* onembed, long long int ostride, long long int odist, cudaDataType outputtype, long long int batch, size_t* workSize, cudaDataType executiontype);
cufftResult cufftXtMalloc(cufftHandle plan, cudaLibXtDesc** descriptor, cufftXtSubFormat format);
cufftResult cufftXtMemcpy(cufftHandle plan, void* dstPointer, void* srcPointer, cufftXtCopyType type);
cufftResult cufftXtQueryPlan(cufftHandle plan, void* queryStruct, cufftXtQueryType queryType);
cufftResult cufftXtSetCallback(cufftHandle plan, void** callback_routine, cufftXtCallbackType cbType, void** caller_info);
cufftResult cufftXtSetCallbackSharedSize(cufftHandle plan, cufftXtCallbackType cbType, size_t sharedSize);
cufftResult cufftXtSetGPUs(cufftHandle handle, int nGPUs, int* whichGPUs);
cufftResult cufftXtSetWorkArea(cufftHandle plan, void** workArea);
cufftResult cufftXtSetWorkAreaPolicy(cufftHandle plan, cufftXtWorkAreaPolicy policy, size_t* workSize);
enum cudaDataType CUDA_R_16F=2 CUDA_C_16F=6 CUDA_R_16BF=14 CUDA_C_16BF=15 CUDA_R_32F=0 CUDA_C_32F=4 CUDA_R_64F=1 CUDA_C_64F=5 CUDA_R_4I=16 CUDA_C_4I=17 CUDA_R_4U=18 CUDA_C_4U=19 CUDA_R_8I=3 CUDA_C_8I=7 CUDA_R_8U=8 CUDA_C_8U=9 CUDA_R_16I=20 CUDA_C_16I=21 CUDA_R_16U=22 CUDA_C_16U=23 CUDA_R_32I=10 CUDA_C_32I=11 CUDA_R_32U=12 CUDA_C_32U=13 CUDA_R_64I=24 CUDA_C_64I=25 CUDA_R_64U=26 CUDA_C_64U=27 CUDA_R_8F_E4M3=28 CUDA_R_8F_E5M2=29
enum cufftProperty NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT=1
enum cufftResult CUFFT_SUCCESS=0 CUFFT_INVALID_PLAN=1 CUFFT_ALLOC_FAILED=2 CUFFT_INVALID_TYPE=3 CUFFT_INVALID_VALUE=4 CUFFT_INTERNAL_ERROR=5 CUFFT_EXEC_FAILED=6 CUFFT_SETUP_FAILED=7 CUFFT_INVALID_SIZE=8 CUFFT_UNALIGNED_DATA=9 CUFFT_INCOMPLETE_PARAMETER_LIST=10 CUFFT_INVALID_DEVICE=11 CUFFT_PARSE_ERROR=12 CUFFT_NO_WORKSPACE=13 CUFFT_NOT_IMPLEMENTED=14 CUFFT_LICENSE_ERROR=15 CUFFT_NOT_SUPPORTED=16
enum cufftType CUFFT_R2C=42 CUFFT_C2R=44 CUFFT_C2C=41 CUFFT_D2Z=106 CUFFT_Z2D=108 CUFFT_Z2Z=105
enum cufftXtCallbackType CUFFT_CB_LD_COMPLEX=0 CUFFT_CB_LD_COMPLEX_DOUBLE=1 CUFFT_CB_LD_REAL=2 CUFFT_CB_LD_REAL_DOUBLE=3 CUFFT_CB_ST_COMPLEX=4 CUFFT_CB_ST_COMPLEX_DOUBLE=5 CUFFT_CB_ST_REAL=6 CUFFT_CB_ST_REAL_DOUBLE=7 CUFFT_CB_UNDEFINED=8
enum cufftXtCopyType CUFFT_COPY_HOST_TO_DEVICE=0 CUFFT_COPY_DEVICE_TO_HOST=1 CUFFT_COPY_DEVICE_TO_DEVICE=2 CUFFT_COPY_UNDEFINED=3
enum cufftXtQueryType CUFFT_QUERY_1D_FACTORS=0 CUFFT_QUERY_UNDEFINED=1
enum cufftXtSubFormat CUFFT_XT_FORMAT_INPUT=0 CUFFT_XT_FORMAT_OUTPUT=1 CUFFT_XT_FORMAT_INPLACE=2 CUFFT_XT_FORMAT_INPLACE_SHUFFLED=3 CUFFT_XT_FORMAT_1D_INPUT_SHUFFLED=4 CUFFT_XT_FORMAT_DISTRIBUTED_INPUT=5 CUFFT_XT_FORMAT_DISTRIBUTED_OUTPUT=6 CUFFT_FORMAT_UNDEFINED=7
enum cufftXtWorkAreaPolicy CUFFT_WORKAREA_MINIMAL=0 CUFFT_WORKAREA_USER=1 CUFFT_WORKAREA_PERFORMANCE=2
enum libraryPropertyType MAJOR_VERSION=0 MINOR_VERSION=1 PATCH_LEVEL=2

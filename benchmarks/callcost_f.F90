! The Fortran twin of tests/programs/callcost.c (bench_shim_fortran.py): one rank, ns per call
! of MPI_Comm_size and of an 8-byte MPI_Sendrecv to self.  mpif.h as is, -DUSE_MPI_F08 for
! use mpi_f08.
program callcost_f
#if defined(USE_MPI_F08)
  use mpi_f08
  implicit none
#else
  implicit none
  include 'mpif.h'
#endif
  integer :: n, i, nsize, rank, ierr
  double precision :: x, y, t0, t1, t2
  character(len=32) :: arg
  n = 1000000
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  x = 1
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  t0 = MPI_Wtime()
  do i = 1, n
    call MPI_Comm_size(MPI_COMM_WORLD, nsize, ierr)
  end do
  t1 = MPI_Wtime()
  do i = 1, n
    call MPI_Sendrecv(x, 1, MPI_DOUBLE_PRECISION, rank, 0, y, 1, MPI_DOUBLE_PRECISION, rank, 0, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end do
  t2 = MPI_Wtime()
  write (*, '(a, f0.3)') 'comm_size_ns ', (t1 - t0) / n * 1d9
  write (*, '(a, f0.3)') 'sendrecv_ns ', (t2 - t1) / n * 1d9
  call MPI_Finalize(ierr)
end program callcost_f
